//! What the apiserver does with a rule before it accepts the CRD, beyond parsing: type-check it
//! against the schema at its location, and estimate its worst-case cost.
//!
//! cel-rust has no type checker and no cost estimator, so this is a small port of the parts of
//! cel-go's checker (`checker/checker.go`, `checker/cost.go`) and of the apiserver's schema→type
//! mapping (`apiserver/pkg/cel/common/schemas.go`, `SchemaDeclType`) that Adze's rules reach:
//! field selection, `has()`, the standard operators, `size`, the string functions
//! `startsWith`/`endsWith`/`contains`/`matches`, `in`, indexing, and the `all`/`exists`/
//! `exists_one`/`filter`/`map` macros. Any other function or construct is reported as
//! unsupported, so a new rule cannot slip past the harness unchecked.

use kube::core::cel::cel::common::ast::{Expr, LiteralValue};
use serde_json::Value;

/// Request size the apiserver assumes when a list, map or string has no bound
/// (`DefaultMaxRequestSizeBytes`, 3 MiB).
pub const MAX_REQUEST_SIZE_BYTES: u64 = 3 * 1024 * 1024;
/// `StaticEstimatedCostLimit`: a rule's cost times its cardinality must not exceed this.
pub const PER_RULE_LIMIT: u64 = 10_000_000;
/// `StaticEstimatedCRDCostLimit`: the sum over a CRD's rules.
pub const PER_CRD_LIMIT: u64 = 100_000_000;
/// `PerCallLimit`: the runtime limit of one evaluation (not checked at CRD creation).
pub const PER_CALL_LIMIT: u64 = 1_000_000;

const STRING_TRAVERSAL_COST_FACTOR: f64 = 0.1;
const REGEX_STRING_LENGTH_COST_FACTOR: f64 = 0.25;
const LIST_CREATE_BASE_COST: u64 = 10;
const MAP_CREATE_BASE_COST: u64 = 30;

/// A CEL type, as the checker sees it. Objects keep their schema for field lookup.
#[derive(Clone, Debug)]
pub enum Ty<'s> {
    Bool,
    Int,
    Uint,
    Double,
    String,
    /// `google.protobuf.Duration`, from `duration(string)`.
    Duration,
    Null,
    Dyn,
    List(Box<Ty<'s>>),
    Map(Box<Ty<'s>>, Box<Ty<'s>>),
    Object(&'s Value),
}

impl Ty<'_> {
    fn name(&self) -> String {
        match self {
            Ty::Bool => "bool".into(),
            Ty::Int => "int".into(),
            Ty::Uint => "uint".into(),
            Ty::Double => "double".into(),
            Ty::String => "string".into(),
            Ty::Duration => "google.protobuf.Duration".into(),
            Ty::Null => "null_type".into(),
            Ty::Dyn => "dyn".into(),
            Ty::List(e) => format!("list({})", e.name()),
            Ty::Map(k, v) => format!("map({}, {})", k.name(), v.name()),
            Ty::Object(_) => "object".into(),
        }
    }

    /// Whether a value of `other` may stand where `self` is expected (cel-go's assignability,
    /// with `dyn` matching anything and objects matched by schema identity).
    fn accepts(&self, other: &Ty) -> bool {
        match (self, other) {
            (Ty::Dyn, _) | (_, Ty::Dyn) => true,
            (Ty::Bool, Ty::Bool)
            | (Ty::Int, Ty::Int)
            | (Ty::Uint, Ty::Uint)
            | (Ty::Double, Ty::Double)
            | (Ty::String, Ty::String)
            | (Ty::Duration, Ty::Duration)
            | (Ty::Null, Ty::Null) => true,
            (Ty::List(a), Ty::List(b)) => a.accepts(b),
            (Ty::Map(ak, av), Ty::Map(bk, bv)) => ak.accepts(bk) && av.accepts(bv),
            (Ty::Object(a), Ty::Object(b)) => std::ptr::eq(*a, *b) || a == b,
            _ => false,
        }
    }

    fn is_numeric(&self) -> bool {
        matches!(self, Ty::Int | Ty::Uint | Ty::Double | Ty::Dyn)
    }
}

impl<'s> Ty<'s> {
    /// The more specific of two accepted types (for ternaries and accumulators).
    fn join(self, other: Ty<'s>) -> Ty<'s> {
        match (&self, &other) {
            (Ty::Dyn, _) => other,
            (Ty::List(a), Ty::List(_)) if matches!(**a, Ty::Dyn) => other,
            _ => self,
        }
    }
}

/// The CEL type the apiserver declares for a schema node (`SchemaDeclType`).
pub fn decl_type(schema: &Value) -> Ty<'_> {
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return Ty::Dyn;
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("array") => match schema.get("items") {
            Some(items) => Ty::List(Box::new(decl_type(items))),
            None => Ty::Dyn,
        },
        Some("object") => match schema.get("additionalProperties") {
            Some(values) if values.is_object() => {
                Ty::Map(Box::new(Ty::String), Box::new(decl_type(values)))
            }
            // Fields the schema does not declare are not visible to CEL, even when preserved.
            _ => Ty::Object(schema),
        },
        Some("string") => Ty::String,
        Some("integer") => Ty::Int,
        Some("number") => Ty::Double,
        Some("boolean") => Ty::Bool,
        _ => Ty::Dyn,
    }
}

/// Smallest JSON serialization of a value of the schema, as the apiserver computes it
/// (`MinSerializedSize`), used to bound unbounded lists and maps by the request size.
pub fn min_serialized_size(schema: &Value) -> u64 {
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return 1;
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("array") => 2,
        Some("object") => {
            if schema
                .get("additionalProperties")
                .is_some_and(Value::is_object)
            {
                return 2;
            }
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut size = 2;
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    if required.contains(&name.as_str()) && prop.get("default").is_none() {
                        size += name.len() as u64 + min_serialized_size(prop) + 4;
                    }
                }
            }
            size
        }
        Some("string") => 2,
        Some("boolean") => 4,
        _ => 1,
    }
}

/// A size bound as the apiserver derives it (`MaxElements`), and whether the schema itself
/// states it (maxItems, maxProperties, maxLength, enum) rather than the request size.
#[derive(Clone, Copy, Debug)]
pub struct Bound {
    pub max: u64,
    pub stated: bool,
}

/// `MaxElements` of a schema node: characters of a string, items of a list, entries of a map.
pub fn max_elements(schema: &Value) -> Bound {
    let stated = |max| Bound { max, stated: true };
    let estimated = |max| Bound { max, stated: false };
    let get = |key: &str| schema.get(key).and_then(Value::as_u64);
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        return match get("maxLength") {
            Some(n) => stated(n * 4),
            None => estimated(MAX_REQUEST_SIZE_BYTES - 2),
        };
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("array") => match get("maxItems") {
            Some(n) => stated(n),
            None => {
                let item = schema.get("items").map_or(1, min_serialized_size);
                estimated((MAX_REQUEST_SIZE_BYTES - 2) / (item + 1))
            }
        },
        Some("object") => match schema.get("additionalProperties") {
            Some(values) if values.is_object() => match get("maxProperties") {
                Some(n) => stated(n),
                None => estimated((MAX_REQUEST_SIZE_BYTES - 2) / (min_serialized_size(values) + 6)),
            },
            _ => stated(0),
        },
        Some("string") => {
            if let Some(n) = get("maxLength") {
                stated(n * 4)
            } else if let Some(values) = schema.get("enum").and_then(Value::as_array) {
                stated(
                    values
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|s| s.len() as u64)
                        .max()
                        .unwrap_or(0),
                )
            } else {
                estimated(MAX_REQUEST_SIZE_BYTES - 2)
            }
        }
        _ => stated(0),
    }
}

/// A checked expression: its type, the largest size it may have (`None`: unknown, as large as
/// anything), and its worst-case cost.
#[derive(Clone, Debug)]
struct Checked<'s> {
    ty: Ty<'s>,
    /// Schema node the value comes from, when it is reachable by a field path (cel-go's
    /// `Path()`), for size estimates of its elements.
    schema: Option<&'s Value>,
    size: Option<u64>,
    cost: u64,
}

/// Result of checking one expression.
#[derive(Debug, Default)]
pub struct Report {
    /// The expression's result type, e.g. `bool`.
    pub result_type: String,
    /// Worst-case cost in cel-go cost units (`EstimateCost(...).Max`).
    pub max_cost: u64,
    /// Whether the expression references `oldSelf` (a transition rule).
    pub uses_old_self: bool,
    /// Lists, maps and strings the expression iterates or scans whose size the schema does
    /// not bound (the apiserver then assumes a 3 MiB request full of them).
    pub unbounded: Vec<String>,
}

struct Scope<'s> {
    name: String,
    checked: Checked<'s>,
}

struct Checker<'s> {
    scopes: Vec<Scope<'s>>,
    report: Report,
}

/// Type-checks `source` with `self` (and `oldSelf`) declared as the schema node's type, and
/// estimates its cost. `Err` carries what cel-go would report as a compile error.
pub fn check(source: &str, node: &Value) -> Result<Report, String> {
    let program =
        kube::core::cel::cel::Program::compile(source).map_err(|e| format!("syntax error: {e}"))?;
    let mut checker = Checker {
        scopes: Vec::new(),
        report: Report::default(),
    };
    for var in ["self", "oldSelf"] {
        let bound = max_elements(node);
        checker.scopes.push(Scope {
            name: var.into(),
            checked: Checked {
                ty: decl_type(node),
                schema: Some(node),
                size: Some(bound.max),
                cost: 1,
            },
        });
    }
    let checked = checker.expr(&program.expression().expr)?;
    let mut report = checker.report;
    report.result_type = checked.ty.name();
    report.max_cost = checked.cost;
    Ok(report)
}

fn factor(size: u64, factor: f64) -> u64 {
    (size as f64 * factor).ceil() as u64
}

fn unknown_size(size: Option<u64>) -> u64 {
    size.unwrap_or(u64::MAX)
}

impl<'s> Checker<'s> {
    fn lookup(&mut self, name: &str) -> Result<Checked<'s>, String> {
        if name == "oldSelf" {
            self.report.uses_old_self = true;
        }
        self.scopes
            .iter()
            .rev()
            .find(|s| s.name == name)
            .map(|s| Checked {
                cost: 1,
                ..s.checked.clone()
            })
            .ok_or_else(|| format!("undeclared reference to '{name}'"))
    }

    fn note_unbounded(&mut self, what: &str, schema: Option<&'s Value>) {
        let stated = schema.is_some_and(|s| max_elements(s).stated);
        if !stated {
            self.report.unbounded.push(what.to_string());
        }
    }

    /// Comparing two values costs as much as the shorter one: only when neither has a stated
    /// bound is the cost the request size.
    fn note_unbounded_pair(
        &mut self,
        op: &str,
        a: &Checked<'s>,
        b: &Checked<'s>,
        exprs: &[kube::core::cel::cel::IdedExpr],
    ) {
        let unstated = |c: &Checked| c.schema.is_some_and(|s| !max_elements(s).stated);
        if unstated(a) && unstated(b) {
            self.report.unbounded.push(format!(
                "{op} between {} and {}",
                describe(&exprs[0].expr),
                describe(&exprs[1].expr)
            ));
        }
    }

    fn expr(&mut self, expr: &Expr) -> Result<Checked<'s>, String> {
        match expr {
            Expr::Literal(literal) => Ok(literal_checked(literal)),
            Expr::Ident(name) => self.lookup(name),
            Expr::Select(select) => {
                let operand = self.expr(&select.operand.expr)?;
                let field = &select.field;
                let (ty, schema) = match &operand.ty {
                    Ty::Object(schema) => {
                        let prop = schema
                            .get("properties")
                            .and_then(|p| p.get(field.as_str()))
                            .ok_or_else(|| format!("undefined field '{field}'"))?;
                        (decl_type(prop), Some(prop))
                    }
                    Ty::Map(key, value) => {
                        if !matches!(**key, Ty::String | Ty::Dyn) {
                            return Err(format!(
                                "type '{}' does not support field selection",
                                operand.ty.name()
                            ));
                        }
                        let values = operand.schema.and_then(|s| s.get("additionalProperties"));
                        ((**value).clone(), values)
                    }
                    Ty::Dyn => (Ty::Dyn, None),
                    other => {
                        return Err(format!(
                            "type '{}' does not support field selection",
                            other.name()
                        ));
                    }
                };
                if select.test {
                    // has(): presence test, cost 1 plus the operand's (cel-go's default).
                    return Ok(Checked {
                        ty: Ty::Bool,
                        schema: None,
                        size: Some(1),
                        cost: operand.cost + 1,
                    });
                }
                let select_cost = match operand.ty {
                    Ty::Object(_) | Ty::Map(..) | Ty::Dyn => 1,
                    _ => 0,
                };
                Ok(Checked {
                    size: schema.map(|s| max_elements(s).max),
                    ty,
                    schema,
                    cost: operand.cost + select_cost,
                })
            }
            Expr::List(list) => {
                let mut elem = Ty::Dyn;
                let mut cost = LIST_CREATE_BASE_COST;
                let mut first: Option<Ty<'s>> = None;
                for element in &list.elements {
                    let checked = self.expr(&element.expr)?;
                    cost += checked.cost;
                    if let Some(first) = &first {
                        // HomogeneousAggregateLiterals: every element of one type.
                        if !first.accepts(&checked.ty) || !checked.ty.accepts(first) {
                            return Err(format!(
                                "expected type '{}' but found '{}'",
                                first.name(),
                                checked.ty.name()
                            ));
                        }
                    } else {
                        first = Some(checked.ty.clone());
                        elem = checked.ty;
                    }
                }
                Ok(Checked {
                    ty: Ty::List(Box::new(elem)),
                    schema: None,
                    size: Some(list.elements.len() as u64),
                    cost,
                })
            }
            Expr::Map(map) => {
                let mut cost = MAP_CREATE_BASE_COST;
                for entry in &map.entries {
                    match &entry.expr {
                        kube::core::cel::cel::common::ast::EntryExpr::MapEntry(e) => {
                            cost += self.expr(&e.key.expr)?.cost + self.expr(&e.value.expr)?.cost;
                        }
                        _ => return Err("unsupported map entry".into()),
                    }
                }
                Ok(Checked {
                    ty: Ty::Map(Box::new(Ty::Dyn), Box::new(Ty::Dyn)),
                    schema: None,
                    size: Some(map.entries.len() as u64),
                    cost,
                })
            }
            Expr::Comprehension(comp) => {
                let range = self.expr(&comp.iter_range.expr)?;
                let (iter_ty, iter_schema, iter_size) = match &range.ty {
                    Ty::List(elem) => {
                        let items = range.schema.and_then(|s| s.get("items"));
                        ((**elem).clone(), items, items.map(|s| max_elements(s).max))
                    }
                    // Map keys are declared as plain strings with no size (`StringType`).
                    Ty::Map(key, _) => ((**key).clone(), None, Some(0)),
                    Ty::Dyn => (Ty::Dyn, None, None),
                    other => {
                        return Err(format!(
                            "expression of type '{}' cannot be range of a comprehension",
                            other.name()
                        ));
                    }
                };
                if comp.iter_var2.is_some() {
                    return Err(
                        "two-variable comprehensions are not supported by the harness".into(),
                    );
                }
                self.note_unbounded(
                    &format!("comprehension over {}", describe(&comp.iter_range.expr)),
                    range.schema,
                );
                let accu_init = self.expr(&comp.accu_init.expr)?;
                self.scopes.push(Scope {
                    name: comp.accu_var.clone(),
                    checked: accu_init.clone(),
                });
                self.scopes.push(Scope {
                    name: comp.iter_var.clone(),
                    checked: Checked {
                        ty: iter_ty,
                        schema: iter_schema,
                        size: iter_size,
                        cost: 1,
                    },
                });
                let condition = self.expr(&comp.loop_cond.expr)?;
                let step = self.expr(&comp.loop_step.expr)?;
                self.scopes.pop();
                if !matches!(condition.ty, Ty::Bool | Ty::Dyn) {
                    return Err("comprehension condition must be bool".into());
                }
                if !accu_init.ty.accepts(&step.ty) {
                    return Err(format!(
                        "comprehension step of type '{}' does not match its accumulator '{}'",
                        step.ty.name(),
                        accu_init.ty.name()
                    ));
                }
                let accu_ty = accu_init.ty.clone().join(step.ty.clone());
                self.scopes.last_mut().unwrap().checked.ty = accu_ty;
                let result = self.expr(&comp.result.expr)?;
                self.scopes.pop();
                let range_count = unknown_size(range.size);
                let loop_cost = range_count.saturating_mul(condition.cost + step.cost);
                let size = match &comp.accu_init.expr {
                    Expr::List(_) | Expr::Map(_) => range.size,
                    _ => result.size,
                };
                Ok(Checked {
                    ty: result.ty,
                    schema: None,
                    size,
                    cost: range
                        .cost
                        .saturating_add(accu_init.cost)
                        .saturating_add(result.cost)
                        .saturating_add(loop_cost),
                })
            }
            Expr::Call(call) => self.call(call),
            Expr::Struct(_) | Expr::Unspecified => {
                Err("message construction is not supported by the harness".into())
            }
        }
    }

    fn call(
        &mut self,
        call: &kube::core::cel::cel::common::ast::CallExpr,
    ) -> Result<Checked<'s>, String> {
        let name = call.func_name.as_str();
        let target = match &call.target {
            Some(t) => Some(self.expr(&t.expr)?),
            None => None,
        };
        let mut args = Vec::new();
        for arg in &call.args {
            args.push(self.expr(&arg.expr)?);
        }
        let arg_cost: u64 = args.iter().map(|a| a.cost).fold(0u64, u64::saturating_add);
        let target_cost = target.as_ref().map_or(0, |t| t.cost);
        let no_overload = |args: &[Checked]| {
            let types: Vec<String> = target
                .iter()
                .chain(args.iter())
                .map(|a| a.ty.name())
                .collect();
            format!(
                "found no matching overload for '{name}' applied to '({})'",
                types.join(", ")
            )
        };
        let scalar = |ty: Ty<'s>, cost: u64| Checked {
            ty,
            schema: None,
            size: Some(1),
            cost,
        };
        let is = |c: &Checked, f: fn(&Ty) -> bool| f(&c.ty) || matches!(c.ty, Ty::Dyn);
        let boolish = |t: &Ty| matches!(t, Ty::Bool);
        let stringish = |t: &Ty| matches!(t, Ty::String);
        match (name, &target, args.as_slice()) {
            ("_&&_" | "_||_", None, [a, b]) => {
                if !is(a, boolish) || !is(b, boolish) {
                    return Err(no_overload(&args));
                }
                Ok(scalar(Ty::Bool, a.cost.saturating_add(b.cost)))
            }
            ("!_" | "@not_strictly_false", None, [a]) => {
                if !is(a, boolish) {
                    return Err(no_overload(&args));
                }
                Ok(scalar(Ty::Bool, 1 + arg_cost))
            }
            ("_?_:_", None, [c, t, f]) => {
                if !is(c, boolish) || !t.ty.accepts(&f.ty) {
                    return Err(no_overload(&args));
                }
                Ok(Checked {
                    ty: t.ty.clone().join(f.ty.clone()),
                    schema: None,
                    size: match (t.size, f.size) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        _ => None,
                    },
                    cost: c.cost.saturating_add(t.cost.max(f.cost)),
                })
            }
            ("_==_" | "_!=_", None, [a, b]) => {
                let comparable = a.ty.accepts(&b.ty)
                    || matches!(a.ty, Ty::Null)
                    || matches!(b.ty, Ty::Null)
                    || (a.ty.is_numeric() && b.ty.is_numeric());
                if !comparable {
                    return Err(no_overload(&args));
                }
                if matches!(a.ty, Ty::String | Ty::List(_) | Ty::Map(..)) {
                    self.note_unbounded_pair(name, &args[0], &args[1], &call.args);
                }
                let smallest = unknown_size(a.size).min(unknown_size(b.size));
                Ok(scalar(
                    Ty::Bool,
                    factor(smallest, STRING_TRAVERSAL_COST_FACTOR).saturating_add(arg_cost),
                ))
            }
            ("_<_" | "_<=_" | "_>_" | "_>=_", None, [a, b]) => {
                let ok = (a.ty.is_numeric() && b.ty.is_numeric())
                    || (is(a, stringish) && is(b, stringish))
                    || (matches!(a.ty, Ty::Duration) && matches!(b.ty, Ty::Duration));
                if !ok {
                    return Err(no_overload(&args));
                }
                let cost = if matches!(a.ty, Ty::String) {
                    self.note_unbounded_pair(name, &args[0], &args[1], &call.args);
                    let smallest = unknown_size(a.size).min(unknown_size(b.size));
                    factor(smallest, STRING_TRAVERSAL_COST_FACTOR)
                } else {
                    1
                };
                Ok(scalar(Ty::Bool, cost.saturating_add(arg_cost)))
            }
            ("_+_", None, [a, b]) => match (&a.ty, &b.ty) {
                (Ty::List(x), Ty::List(y)) if x.accepts(y) => Ok(Checked {
                    ty: a.ty.clone().join(b.ty.clone()),
                    schema: None,
                    size: a.size.zip(b.size).map(|(x, y)| x.saturating_add(y)),
                    cost: 1 + arg_cost,
                }),
                (Ty::String, Ty::String) => {
                    let size = unknown_size(a.size).saturating_add(unknown_size(b.size));
                    Ok(Checked {
                        ty: Ty::String,
                        schema: None,
                        size: Some(size),
                        cost: factor(size, STRING_TRAVERSAL_COST_FACTOR).saturating_add(arg_cost),
                    })
                }
                (x, y) if x.is_numeric() && x.accepts(y) => Ok(scalar(a.ty.clone(), 1 + arg_cost)),
                _ => Err(no_overload(&args)),
            },
            ("_-_" | "_*_" | "_/_" | "_%_", None, [a, b]) => {
                if !(a.ty.is_numeric() && a.ty.accepts(&b.ty)) {
                    return Err(no_overload(&args));
                }
                Ok(scalar(a.ty.clone(), 1 + arg_cost))
            }
            ("@in", None, [elem, container]) => match &container.ty {
                Ty::List(item) if item.accepts(&elem.ty) => Ok(scalar(
                    Ty::Bool,
                    unknown_size(container.size).saturating_add(arg_cost),
                )),
                Ty::Map(key, _) if key.accepts(&elem.ty) => Ok(scalar(Ty::Bool, 1 + arg_cost)),
                Ty::Dyn => Ok(scalar(Ty::Bool, 1 + arg_cost)),
                _ => Err(no_overload(&args)),
            },
            ("_[_]", None, [container, index]) => {
                let (ty, schema) = match &container.ty {
                    Ty::List(item) if matches!(index.ty, Ty::Int | Ty::Dyn) => (
                        (**item).clone(),
                        container.schema.and_then(|s| s.get("items")),
                    ),
                    Ty::Map(key, value) if key.accepts(&index.ty) => (
                        (**value).clone(),
                        container.schema.and_then(|s| s.get("additionalProperties")),
                    ),
                    Ty::Dyn => (Ty::Dyn, None),
                    _ => return Err(no_overload(&args)),
                };
                Ok(Checked {
                    size: schema.map(|s| max_elements(s).max),
                    ty,
                    schema,
                    cost: 1 + arg_cost,
                })
            }
            // A type conversion: cel-go prices it as any plain call, 1 plus its argument; the
            // string is parsed at run time (a bad one is an evaluation error).
            ("duration", None, [a]) => {
                if !is(a, stringish) {
                    return Err(no_overload(&args));
                }
                Ok(scalar(Ty::Duration, 1 + arg_cost))
            }
            ("size", None, [a]) | ("size", Some(a), []) => {
                if !matches!(a.ty, Ty::String | Ty::List(_) | Ty::Map(..) | Ty::Dyn) {
                    return Err(no_overload(&args));
                }
                Ok(scalar(Ty::Int, 1 + arg_cost + target_cost))
            }
            ("startsWith" | "endsWith", Some(t), [prefix]) => {
                if !is(t, stringish) || !is(prefix, stringish) {
                    return Err(no_overload(&args));
                }
                Ok(scalar(
                    Ty::Bool,
                    factor(unknown_size(prefix.size), STRING_TRAVERSAL_COST_FACTOR)
                        .saturating_add(arg_cost)
                        .saturating_add(target_cost),
                ))
            }
            ("contains", Some(t), [needle]) => {
                if !is(t, stringish) || !is(needle, stringish) {
                    return Err(no_overload(&args));
                }
                if t.size != Some(0) {
                    self.note_unbounded(
                        &format!("contains() on {}", describe_call_target(call)),
                        t.schema,
                    );
                }
                let cost =
                    factor(unknown_size(t.size), STRING_TRAVERSAL_COST_FACTOR).saturating_mul(
                        factor(unknown_size(needle.size), STRING_TRAVERSAL_COST_FACTOR),
                    );
                Ok(scalar(
                    Ty::Bool,
                    cost.saturating_add(arg_cost).saturating_add(target_cost),
                ))
            }
            ("matches", Some(t), [pattern]) => {
                if !is(t, stringish) || !is(pattern, stringish) {
                    return Err(no_overload(&args));
                }
                // The apiserver compiles constant patterns with RE2 at CRD creation.
                if let Some(Expr::Literal(LiteralValue::String(p))) =
                    call.args.first().map(|a| &a.expr)
                {
                    regex::Regex::new(p.inner())
                        .map_err(|e| format!("invalid regular expression {:?}: {e}", p.inner()))?;
                }
                self.note_unbounded(
                    &format!("matches() on {}", describe_call_target(call)),
                    t.schema,
                );
                let str_cost = factor(
                    unknown_size(t.size).saturating_add(1),
                    STRING_TRAVERSAL_COST_FACTOR,
                );
                let regex_cost =
                    factor(unknown_size(pattern.size), REGEX_STRING_LENGTH_COST_FACTOR);
                Ok(scalar(
                    Ty::Bool,
                    str_cost
                        .saturating_mul(regex_cost)
                        .saturating_add(arg_cost)
                        .saturating_add(target_cost),
                ))
            }
            _ => Err(format!(
                "function '{name}' (with {} argument(s){}) is not known to the test harness; \
                 teach api/tests/cel_harness/check.rs its signature and cost first",
                args.len(),
                if target.is_some() {
                    ", as a method"
                } else {
                    ""
                }
            )),
        }
    }
}

fn literal_checked<'s>(literal: &LiteralValue) -> Checked<'s> {
    let (ty, size) = match literal {
        LiteralValue::Boolean(_) => (Ty::Bool, 1),
        LiteralValue::Int(_) => (Ty::Int, 1),
        LiteralValue::UInt(_) => (Ty::Uint, 1),
        LiteralValue::Double(_) => (Ty::Double, 1),
        LiteralValue::Null => (Ty::Null, 1),
        LiteralValue::String(s) => (Ty::String, s.inner().chars().count() as u64),
        LiteralValue::Bytes(b) => (Ty::Dyn, b.inner().len() as u64),
    };
    Checked {
        ty,
        schema: None,
        size: Some(size),
        cost: 0,
    }
}

fn describe(expr: &Expr) -> String {
    match expr {
        Expr::Ident(name) => name.clone(),
        Expr::Select(s) => format!("{}.{}", describe(&s.operand.expr), s.field),
        _ => "an expression".into(),
    }
}

fn describe_call_target(call: &kube::core::cel::cel::common::ast::CallExpr) -> String {
    call.target
        .as_ref()
        .map_or_else(|| "an expression".into(), |t| describe(&t.expr))
}
