//! Kubelet settings written as expressions over the instance type: `maxPods` and the values of
//! `kubeReserved` / `systemReserved` in an EC2NodeClass may be formulas such as
//! `min(110, default_enis * (ips_per_eni - 1))` or `11 * max_pods + 255`, so one class fits
//! every size it launches (Karpenter v1.15's CEL kubelet fields).
//!
//! The language is the arithmetic subset of CEL those fields need, parsed and evaluated here
//! rather than by a general CEL engine, so that its cost is bounded before any work is done:
//! an expression is at most [`MAX_LEN`] bytes and [`MAX_NODES`] terms, nested at most
//! [`MAX_DEPTH`] deep, and every operation is checked (integer overflow, division by zero and
//! non-finite doubles are errors, never wrapped or saturated values).
//!
//! * values: integers, doubles (`60.5`), strings (`"m5.large"`), `true` / `false`;
//! * variables: `vcpus`, `memory_mib` (the type's advertised memory), `default_enis` and
//!   `ips_per_eni` (its primary network card), `max_pods` and `instance_type`;
//! * operators: `+ - * / %`, `== != < <= > >=`, `&& || !`, `cond ? a : b`, parentheses;
//! * functions: `min(a, b, ...)`, `max(a, b, ...)`, `double(x)`, `int(x)`.
//!
//! As in CEL, `+ - * / %` take two integers or two doubles (`double(vcpus) * 0.5`, not
//! `vcpus * 0.5`); comparisons and `min` / `max` accept a mix. The result must be a number; a
//! double result is truncated toward zero.

use std::collections::BTreeMap;
use std::fmt;

use thiserror::Error;

use crate::instance_type::InstanceType;
use crate::labels;

const MIB: i64 = 1 << 20;
const GIB: i64 = 1 << 30;

/// The longest expression accepted (bytes), the CRD's `maxLength` too.
pub const MAX_LEN: usize = 1024;
/// The most terms (literals, variables, operators, calls) in one expression.
pub const MAX_NODES: usize = 256;
/// The deepest nesting of one expression's terms.
pub const MAX_DEPTH: usize = 64;
/// How deep the parser may recurse: each nesting level of the source costs it several calls.
const MAX_PARSE_DEPTH: usize = 8 * MAX_DEPTH;

/// An expression that does not compile.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct CompileError {
    pub message: String,
}

/// An expression that compiled but has no usable value for one instance type.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct EvalError {
    pub message: String,
}

fn compile_err(message: impl Into<String>) -> CompileError {
    CompileError {
        message: message.into(),
    }
}

fn eval_err(message: impl Into<String>) -> EvalError {
    EvalError {
        message: message.into(),
    }
}

/// What an expression is evaluated against: one instance type as the class launches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vars {
    pub vcpus: i64,
    pub memory_mib: i64,
    /// None: the catalog gave no network facts for the type (a custom catalog).
    pub default_enis: Option<i64>,
    pub ips_per_eni: Option<i64>,
    /// For `maxPods` itself, the pods the type runs by default (its ENI limit); for the
    /// reservations, the resolved `maxPods`.
    pub max_pods: i64,
    pub instance_type: String,
}

impl Vars {
    /// The variables of `t` (a catalog type) with `max_pods` given.
    pub fn of(t: &InstanceType, max_pods: i64) -> Vars {
        let vcpus = t
            .label(labels::INSTANCE_CPU)
            .and_then(|c| c.parse::<i64>().ok())
            .unwrap_or_else(|| t.capacity.cpu.saturating_add(999) / 1000);
        let memory_mib = t
            .label(labels::INSTANCE_MEMORY)
            .and_then(|m| m.parse::<i64>().ok())
            .unwrap_or(t.capacity.memory / MIB);
        Vars {
            vcpus,
            memory_mib,
            default_enis: t.network.map(|n| i64::from(n.default_enis)),
            ips_per_eni: t.network.map(|n| i64::from(n.ipv4_per_eni)),
            max_pods,
            instance_type: t.name.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Var {
    Vcpus,
    MemoryMib,
    DefaultEnis,
    IpsPerEni,
    MaxPods,
    InstanceType,
}

impl Var {
    const ALL: [(&'static str, Var); 6] = [
        ("vcpus", Var::Vcpus),
        ("memory_mib", Var::MemoryMib),
        ("default_enis", Var::DefaultEnis),
        ("ips_per_eni", Var::IpsPerEni),
        ("max_pods", Var::MaxPods),
        ("instance_type", Var::InstanceType),
    ];

    fn name(self) -> &'static str {
        Var::ALL
            .iter()
            .find(|(_, v)| *v == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }

    fn ty(self) -> Ty {
        match self {
            Var::InstanceType => Ty::Str,
            _ => Ty::Int,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Int,
    Double,
    Bool,
    Str,
}

impl Ty {
    fn numeric(self) -> bool {
        matches!(self, Ty::Int | Ty::Double)
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ty::Int => "int",
            Ty::Double => "double",
            Ty::Bool => "bool",
            Ty::Str => "string",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl Op {
    fn symbol(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Sub => "-",
            Op::Mul => "*",
            Op::Div => "/",
            Op::Rem => "%",
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::And => "&&",
            Op::Or => "||",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Func {
    Min,
    Max,
    Double,
    Int,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Int(i64),
    Double(f64),
    Str(String),
    Bool(bool),
    Var(Var),
    Neg(Box<Node>),
    Not(Box<Node>),
    Bin(Op, Box<Node>, Box<Node>),
    Cond(Box<Node>, Box<Node>, Box<Node>),
    Call(Func, Vec<Node>),
}

/// A compiled, type-checked expression with a numeric result.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    source: String,
    root: Node,
}

impl Expr {
    /// Parses and type-checks `source`.
    pub fn compile(source: &str) -> Result<Expr, CompileError> {
        if source.len() > MAX_LEN {
            return Err(compile_err(format!(
                "is {} bytes long; an expression may be at most {MAX_LEN}",
                source.len()
            )));
        }
        if source.trim().is_empty() {
            return Err(compile_err("is empty"));
        }
        let tokens = lex(source)?;
        let mut p = Parser {
            tokens,
            at: 0,
            nodes: 0,
        };
        let root = p.ternary(0)?;
        if let Some((tok, col)) = p.tokens.get(p.at) {
            return Err(compile_err(format!(
                "unexpected {tok} at column {col} after a complete expression"
            )));
        }
        if depth(&root) > MAX_DEPTH {
            return Err(compile_err(format!("nests deeper than {MAX_DEPTH} levels")));
        }
        let ty = check(&root)?;
        if !ty.numeric() {
            return Err(compile_err(format!(
                "gives a {ty}; the setting needs a number (int or double)"
            )));
        }
        Ok(Expr {
            source: source.to_string(),
            root,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// The value for one instance type: an integer, a double truncated toward zero.
    pub fn eval(&self, vars: &Vars) -> Result<i64, EvalError> {
        match eval(&self.root, vars)? {
            Value::Int(v) => Ok(v),
            Value::Double(d) => double_to_int(d),
            other => Err(eval_err(format!("gave {other:?}, not a number"))),
        }
    }

    /// A reservation's amount for one type (in its resource's unit, see [`reserved_unit`]):
    /// the value, refused when negative, as kubelet refuses a negative reservation. Planning
    /// ([`crate::node_class::kubelet_for`]) and user data ([`Reserved::resolve`]) both read
    /// reservations through this.
    pub fn reservation(&self, vars: &Vars) -> Result<i64, EvalError> {
        let n = self.eval(vars)?;
        if n < 0 {
            return Err(eval_err(format!(
                "gave {n}; a reservation may not be negative"
            )));
        }
        Ok(n)
    }
}

fn double_to_int(d: f64) -> Result<i64, EvalError> {
    if !d.is_finite() {
        return Err(eval_err(format!("gave {d}, not a finite number")));
    }
    let t = d.trunc();
    // i64::MAX as f64 rounds up to 2^63, itself out of range.
    if t >= -(2f64.powi(63)) && t < 2f64.powi(63) {
        Ok(t as i64)
    } else {
        Err(eval_err(format!("gave {d}, beyond a 64-bit integer")))
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// Unsigned: 9223372036854775808 is a literal only after a minus.
    Int(u64),
    Double(f64),
    Str(String),
    Ident(String),
    Sym(&'static str),
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Int(v) => write!(f, "number {v}"),
            Tok::Double(v) => write!(f, "number {v}"),
            Tok::Str(s) => write!(f, "string {s:?}"),
            Tok::Ident(s) => write!(f, "name {s:?}"),
            Tok::Sym(s) => write!(f, "{s:?}"),
        }
    }
}

const SYMBOLS: [&str; 19] = [
    "==", "!=", "<=", ">=", "&&", "||", "+", "-", "*", "/", "%", "<", ">", "!", "?", ":", "(", ")",
    ",",
];

fn lex(src: &str) -> Result<Vec<(Tok, usize)>, CompileError> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let col = i + 1;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if out.len() >= MAX_NODES * 2 {
            return Err(compile_err(format!(
                "has more than {} tokens",
                MAX_NODES * 2
            )));
        }
        if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let mut double = false;
            if i < bytes.len() && bytes[i] == b'.' {
                double = true;
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                double = true;
                i += 1;
                if i < bytes.len() && (bytes[i] == b'+' || bytes[i] == b'-') {
                    i += 1;
                }
                let digits = i;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
                if digits == i {
                    return Err(compile_err(format!("malformed number at column {col}")));
                }
            }
            if i < bytes.len() && (bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') {
                return Err(compile_err(format!(
                    "malformed number at column {col}: a quantity such as \"2Gi\" is written without an expression, and a number may not carry a unit"
                )));
            }
            let text = &src[start..i];
            let tok = if double {
                let v: f64 = text
                    .parse()
                    .map_err(|_| compile_err(format!("malformed number at column {col}")))?;
                if !v.is_finite() {
                    return Err(compile_err(format!("number at column {col} is too large")));
                }
                Tok::Double(v)
            } else {
                Tok::Int(text.parse().map_err(|_| int_too_large(col))?)
            };
            out.push((tok, col));
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(src[start..i].to_string()), col));
            continue;
        }
        if c == b'"' || c == b'\'' {
            let start = i + 1;
            i += 1;
            while i < bytes.len() && bytes[i] != c {
                if bytes[i] == b'\\' {
                    return Err(compile_err(format!(
                        "escape sequences are not supported (string at column {col})"
                    )));
                }
                i += 1;
            }
            if i >= bytes.len() {
                return Err(compile_err(format!("unterminated string at column {col}")));
            }
            out.push((Tok::Str(src[start..i].to_string()), col));
            i += 1;
            continue;
        }
        let Some(sym) = SYMBOLS.iter().find(|s| src[i..].starts_with(**s)).copied() else {
            let ch = src[i..].chars().next().unwrap_or('?');
            return Err(compile_err(format!(
                "unexpected character {ch:?} at column {col}"
            )));
        };
        i += sym.len();
        out.push((Tok::Sym(sym), col));
    }
    Ok(out)
}

fn int_too_large(col: usize) -> CompileError {
    compile_err(format!("integer at column {col} does not fit in 64 bits"))
}

struct Parser {
    tokens: Vec<(Tok, usize)>,
    at: usize,
    nodes: usize,
}

impl Parser {
    fn node(&mut self, n: Node) -> Result<Node, CompileError> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(compile_err(format!("has more than {MAX_NODES} terms")));
        }
        Ok(n)
    }

    fn peek_sym(&self) -> Option<&'static str> {
        match self.tokens.get(self.at) {
            Some((Tok::Sym(s), _)) => Some(s),
            _ => None,
        }
    }

    fn eat(&mut self, sym: &str) -> bool {
        if self.peek_sym() == Some(sym) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, sym: &str) -> Result<(), CompileError> {
        if self.eat(sym) {
            return Ok(());
        }
        Err(match self.tokens.get(self.at) {
            Some((tok, col)) => {
                compile_err(format!("expected {sym:?} at column {col}, found {tok}"))
            }
            None => compile_err(format!("expected {sym:?} but the expression ended")),
        })
    }

    fn deeper(depth: usize) -> Result<usize, CompileError> {
        if depth >= MAX_PARSE_DEPTH {
            return Err(compile_err(format!("nests deeper than {MAX_DEPTH} levels")));
        }
        Ok(depth + 1)
    }

    fn ternary(&mut self, depth: usize) -> Result<Node, CompileError> {
        let d = Self::deeper(depth)?;
        let cond = self.binary(0, d)?;
        if !self.eat("?") {
            return Ok(cond);
        }
        let yes = self.ternary(d)?;
        self.expect(":")?;
        let no = self.ternary(d)?;
        self.node(Node::Cond(Box::new(cond), Box::new(yes), Box::new(no)))
    }

    /// Binary operators by precedence level, loosest first (CEL's order).
    const LEVELS: [&'static [(&'static str, Op)]; 5] = [
        &[("||", Op::Or)],
        &[("&&", Op::And)],
        &[
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("<", Op::Lt),
            (">", Op::Gt),
        ],
        &[("+", Op::Add), ("-", Op::Sub)],
        &[("*", Op::Mul), ("/", Op::Div), ("%", Op::Rem)],
    ];

    fn binary(&mut self, level: usize, depth: usize) -> Result<Node, CompileError> {
        let Some(ops) = Self::LEVELS.get(level) else {
            return self.unary(depth);
        };
        let d = Self::deeper(depth)?;
        let mut left = self.binary(level + 1, d)?;
        while let Some(op) = self
            .peek_sym()
            .and_then(|s| ops.iter().find(|(sym, _)| *sym == s).map(|(_, op)| *op))
        {
            self.at += 1;
            let right = self.binary(level + 1, d)?;
            left = self.node(Node::Bin(op, Box::new(left), Box::new(right)))?;
        }
        Ok(left)
    }

    fn unary(&mut self, depth: usize) -> Result<Node, CompileError> {
        let d = Self::deeper(depth)?;
        if self.eat("-") {
            // A negative literal stays a literal, so -9223372036854775808 is representable.
            if let Some((Tok::Int(v), col)) = self.tokens.get(self.at).cloned() {
                self.at += 1;
                let v = 0i64
                    .checked_sub_unsigned(v)
                    .ok_or_else(|| int_too_large(col))?;
                return self.node(Node::Int(v));
            }
            let inner = self.unary(d)?;
            return self.node(Node::Neg(Box::new(inner)));
        }
        if self.eat("!") {
            let inner = self.unary(d)?;
            return self.node(Node::Not(Box::new(inner)));
        }
        self.primary(d)
    }

    fn primary(&mut self, depth: usize) -> Result<Node, CompileError> {
        let Some((tok, col)) = self.tokens.get(self.at).cloned() else {
            return Err(compile_err("ends where a value was expected"));
        };
        self.at += 1;
        match tok {
            Tok::Int(v) => {
                let v = i64::try_from(v).map_err(|_| int_too_large(col))?;
                self.node(Node::Int(v))
            }
            Tok::Double(v) => self.node(Node::Double(v)),
            Tok::Str(s) => self.node(Node::Str(s)),
            Tok::Sym("(") => {
                let inner = self.ternary(depth)?;
                self.expect(")")?;
                Ok(inner)
            }
            Tok::Ident(name) => {
                if self.eat("(") {
                    let func = match name.as_str() {
                        "min" => Func::Min,
                        "max" => Func::Max,
                        "double" => Func::Double,
                        "int" => Func::Int,
                        _ => {
                            return Err(compile_err(format!(
                                "unknown function {name:?} at column {col}; known: min, max, double, int"
                            )));
                        }
                    };
                    let mut args = Vec::new();
                    if !self.eat(")") {
                        loop {
                            args.push(self.ternary(depth)?);
                            if self.eat(")") {
                                break;
                            }
                            if !self.eat(",") {
                                return Err(match self.tokens.get(self.at) {
                                    Some((tok, col)) => compile_err(format!(
                                        "expected \",\" or \")\" at column {col}, found {tok}"
                                    )),
                                    None => compile_err(format!(
                                        "expected \",\" or \")\" but the expression ended (the call at column {col} is not closed)"
                                    )),
                                });
                            }
                        }
                    }
                    return self.node(Node::Call(func, args));
                }
                match name.as_str() {
                    "true" => self.node(Node::Bool(true)),
                    "false" => self.node(Node::Bool(false)),
                    _ => match Var::ALL.iter().find(|(n, _)| *n == name) {
                        Some((_, v)) => self.node(Node::Var(*v)),
                        None => Err(compile_err(format!(
                            "unknown variable {name:?} at column {col}; known: {}",
                            Var::ALL.map(|(n, _)| n).join(", ")
                        ))),
                    },
                }
            }
            Tok::Sym(s) => Err(compile_err(format!(
                "unexpected {s:?} at column {col} where a value was expected"
            ))),
        }
    }
}

fn depth(n: &Node) -> usize {
    // Iterative, so a long left-leaning chain (a + a + ... + a) cannot exhaust the stack.
    let mut max = 0;
    let mut stack = vec![(n, 1usize)];
    while let Some((n, d)) = stack.pop() {
        max = max.max(d);
        match n {
            Node::Neg(a) | Node::Not(a) => stack.push((a, d + 1)),
            Node::Bin(_, a, b) => {
                stack.push((a, d + 1));
                stack.push((b, d + 1));
            }
            Node::Cond(a, b, c) => {
                stack.push((a, d + 1));
                stack.push((b, d + 1));
                stack.push((c, d + 1));
            }
            Node::Call(_, args) => stack.extend(args.iter().map(|a| (a, d + 1))),
            _ => {}
        }
    }
    max
}

fn check(n: &Node) -> Result<Ty, CompileError> {
    Ok(match n {
        Node::Int(_) => Ty::Int,
        Node::Double(_) => Ty::Double,
        Node::Str(_) => Ty::Str,
        Node::Bool(_) => Ty::Bool,
        Node::Var(v) => v.ty(),
        Node::Neg(a) => {
            let t = check(a)?;
            if !t.numeric() {
                return Err(compile_err(format!("cannot negate a {t}")));
            }
            t
        }
        Node::Not(a) => {
            let t = check(a)?;
            if t != Ty::Bool {
                return Err(compile_err(format!("! needs a bool, not a {t}")));
            }
            Ty::Bool
        }
        Node::Bin(op, a, b) => {
            let (l, r) = (check(a)?, check(b)?);
            match op {
                Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Rem => {
                    if !l.numeric() || !r.numeric() {
                        return Err(compile_err(format!(
                            "{} needs numbers, not {l} and {r}",
                            op.symbol()
                        )));
                    }
                    if l != r {
                        return Err(compile_err(format!(
                            "{} between an {l} and a {r}: convert one with double(...) or int(...)",
                            op.symbol()
                        )));
                    }
                    if *op == Op::Rem && l == Ty::Double {
                        return Err(compile_err("% needs integers"));
                    }
                    l
                }
                Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge => {
                    let comparable = (l.numeric() && r.numeric())
                        || (l == r && (l == Ty::Str || matches!(op, Op::Eq | Op::Ne)));
                    if !comparable {
                        return Err(compile_err(format!(
                            "cannot compare a {l} with a {r} using {}",
                            op.symbol()
                        )));
                    }
                    Ty::Bool
                }
                Op::And | Op::Or => {
                    if l != Ty::Bool || r != Ty::Bool {
                        return Err(compile_err(format!(
                            "{} needs bools, not {l} and {r}",
                            op.symbol()
                        )));
                    }
                    Ty::Bool
                }
            }
        }
        Node::Cond(c, a, b) => {
            let ct = check(c)?;
            if ct != Ty::Bool {
                return Err(compile_err(format!(
                    "the condition before ? must be a bool, not a {ct}"
                )));
            }
            let (l, r) = (check(a)?, check(b)?);
            if l != r {
                return Err(compile_err(format!(
                    "the branches of ?: give an {l} and a {r}; make them the same type"
                )));
            }
            l
        }
        Node::Call(func, args) => {
            let types = args.iter().map(check).collect::<Result<Vec<_>, _>>()?;
            if types.iter().any(|t| !t.numeric()) {
                return Err(compile_err(format!(
                    "{}(...) takes numbers",
                    func_name(*func)
                )));
            }
            match func {
                Func::Min | Func::Max => {
                    if args.is_empty() {
                        return Err(compile_err(format!(
                            "{}(...) needs at least one argument",
                            func_name(*func)
                        )));
                    }
                    if types.iter().all(|t| *t == Ty::Int) {
                        Ty::Int
                    } else {
                        Ty::Double
                    }
                }
                Func::Double | Func::Int => {
                    if args.len() != 1 {
                        return Err(compile_err(format!(
                            "{}(...) takes one argument",
                            func_name(*func)
                        )));
                    }
                    if *func == Func::Double {
                        Ty::Double
                    } else {
                        Ty::Int
                    }
                }
            }
        }
    })
}

fn func_name(f: Func) -> &'static str {
    match f {
        Func::Min => "min",
        Func::Max => "max",
        Func::Double => "double",
        Func::Int => "int",
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Int(i64),
    Double(f64),
    Bool(bool),
    Str(String),
}

impl Value {
    fn as_f64(&self) -> f64 {
        match self {
            Value::Int(v) => *v as f64,
            Value::Double(d) => *d,
            _ => f64::NAN,
        }
    }
}

fn overflow(op: Op) -> EvalError {
    eval_err(format!("{} overflows a 64-bit integer", op.symbol()))
}

fn eval(n: &Node, vars: &Vars) -> Result<Value, EvalError> {
    Ok(match n {
        Node::Int(v) => Value::Int(*v),
        Node::Double(d) => Value::Double(*d),
        Node::Str(s) => Value::Str(s.clone()),
        Node::Bool(b) => Value::Bool(*b),
        Node::Var(v) => match v {
            Var::Vcpus => Value::Int(vars.vcpus),
            Var::MemoryMib => Value::Int(vars.memory_mib),
            Var::MaxPods => Value::Int(vars.max_pods),
            Var::InstanceType => Value::Str(vars.instance_type.clone()),
            Var::DefaultEnis | Var::IpsPerEni => {
                let known = if *v == Var::DefaultEnis {
                    vars.default_enis
                } else {
                    vars.ips_per_eni
                };
                Value::Int(known.ok_or_else(|| {
                    eval_err(format!(
                        "{} is not known for {}: the catalog has no network facts for it",
                        v.name(),
                        vars.instance_type
                    ))
                })?)
            }
        },
        Node::Neg(a) => match eval(a, vars)? {
            Value::Int(v) => Value::Int(
                v.checked_neg()
                    .ok_or_else(|| eval_err("negation overflows a 64-bit integer"))?,
            ),
            Value::Double(d) => Value::Double(-d),
            other => return Err(eval_err(format!("cannot negate {other:?}"))),
        },
        Node::Not(a) => match eval(a, vars)? {
            Value::Bool(b) => Value::Bool(!b),
            other => return Err(eval_err(format!("cannot apply ! to {other:?}"))),
        },
        Node::Bin(Op::And, a, b) => match eval(a, vars)? {
            Value::Bool(false) => Value::Bool(false),
            _ => eval(b, vars)?,
        },
        Node::Bin(Op::Or, a, b) => match eval(a, vars)? {
            Value::Bool(true) => Value::Bool(true),
            _ => eval(b, vars)?,
        },
        Node::Bin(op, a, b) => binary(*op, eval(a, vars)?, eval(b, vars)?)?,
        Node::Cond(c, a, b) => match eval(c, vars)? {
            Value::Bool(true) => eval(a, vars)?,
            _ => eval(b, vars)?,
        },
        Node::Call(func, args) => {
            let values = args
                .iter()
                .map(|a| eval(a, vars))
                .collect::<Result<Vec<_>, _>>()?;
            match func {
                Func::Double => Value::Double(values[0].as_f64()),
                Func::Int => match &values[0] {
                    Value::Int(v) => Value::Int(*v),
                    Value::Double(d) => Value::Int(double_to_int(*d)?),
                    other => return Err(eval_err(format!("int() of {other:?}"))),
                },
                Func::Min | Func::Max => {
                    let all_int = values.iter().all(|v| matches!(v, Value::Int(_)));
                    let pick_max = *func == Func::Max;
                    if all_int {
                        let ints = values.iter().map(|v| match v {
                            Value::Int(i) => *i,
                            _ => 0,
                        });
                        let r = if pick_max { ints.max() } else { ints.min() };
                        Value::Int(r.unwrap_or(0))
                    } else {
                        let mut best = values[0].as_f64();
                        for v in &values[1..] {
                            let x = v.as_f64();
                            if x.is_nan() || best.is_nan() {
                                best = f64::NAN;
                            } else if (pick_max && x > best) || (!pick_max && x < best) {
                                best = x;
                            }
                        }
                        Value::Double(best)
                    }
                }
            }
        }
    })
}

fn binary(op: Op, l: Value, r: Value) -> Result<Value, EvalError> {
    use std::cmp::Ordering;
    let ordering = |l: &Value, r: &Value| -> Option<Ordering> {
        match (l, r) {
            (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
            (Value::Str(a), Value::Str(b)) => Some(a.cmp(b)),
            (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
            (a, b) => a.as_f64().partial_cmp(&b.as_f64()),
        }
    };
    Ok(match op {
        Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge => {
            let ord = ordering(&l, &r);
            Value::Bool(match op {
                Op::Eq => ord == Some(Ordering::Equal),
                Op::Ne => ord != Some(Ordering::Equal),
                Op::Lt => ord == Some(Ordering::Less),
                Op::Le => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
                Op::Gt => ord == Some(Ordering::Greater),
                _ => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
            })
        }
        _ => match (l, r) {
            (Value::Int(a), Value::Int(b)) => Value::Int(match op {
                Op::Add => a.checked_add(b).ok_or_else(|| overflow(op))?,
                Op::Sub => a.checked_sub(b).ok_or_else(|| overflow(op))?,
                Op::Mul => a.checked_mul(b).ok_or_else(|| overflow(op))?,
                Op::Div | Op::Rem if b == 0 => {
                    return Err(eval_err(format!("{} by zero", op.symbol())));
                }
                Op::Div => a.checked_div(b).ok_or_else(|| overflow(op))?,
                Op::Rem => a.checked_rem(b).ok_or_else(|| overflow(op))?,
                _ => return Err(eval_err(format!("{} on integers", op.symbol()))),
            }),
            (Value::Double(a), Value::Double(b)) => Value::Double(match op {
                Op::Add => a + b,
                Op::Sub => a - b,
                Op::Mul => a * b,
                Op::Div => a / b,
                _ => return Err(eval_err(format!("{} on doubles", op.symbol()))),
            }),
            (l, r) => {
                return Err(eval_err(format!("{} between {l:?} and {r:?}", op.symbol())));
            }
        },
    })
}

/// A `kubeReserved` / `systemReserved` value: a quantity as kubelet reads it, or (anything
/// that is not one) an expression. "100" is a quantity, as it is to Karpenter.
pub fn is_expression(value: &str) -> bool {
    !looks_like_quantity(value)
}

/// Shaped like a quantity (sign, digits, an exponent or a suffix of up to two letters), whether
/// or not its number is in range: an out-of-range "9Ei" is a bad quantity, not an expression.
fn looks_like_quantity(value: &str) -> bool {
    let v = value.strip_prefix(['+', '-']).unwrap_or(value);
    let number_end = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (number, suffix) = v.split_at(number_end);
    if !number.bytes().any(|b| b.is_ascii_digit()) {
        return false;
    }
    let exponent = suffix
        .strip_prefix(['e', 'E'])
        .map(|e| e.strip_prefix(['+', '-']).unwrap_or(e))
        .is_some_and(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()));
    exponent || (suffix.len() <= 2 && suffix.bytes().all(|b| b.is_ascii_alphabetic()))
}

/// The unit a reservation expression's number is in, by resource: cpu in millicores, memory
/// in MiB, ephemeral-storage in GiB, pid a count. Returns (model units per one, the quantity
/// suffix user data writes).
pub fn reserved_unit(resource: &str) -> (i64, &'static str) {
    match resource {
        "cpu" => (1, "m"),
        "memory" => (MIB, "Mi"),
        "ephemeral-storage" => (GIB, "Gi"),
        _ => (1, ""),
    }
}

/// A `kubeReserved` or `systemReserved` map compiled once (per launch, not per instance type):
/// quantities kept as written, expressions compiled.
#[derive(Debug, Clone)]
pub struct Reserved {
    field: &'static str,
    entries: Vec<(String, ReservedValue)>,
}

#[derive(Debug, Clone)]
enum ReservedValue {
    Quantity(String),
    Expr(Expr),
}

impl Reserved {
    /// `field` names the map in errors (`kubeReserved[cpu]: ...`).
    pub fn compile(field: &'static str, map: &BTreeMap<String, String>) -> Result<Self, EvalError> {
        let entries = map
            .iter()
            .map(|(resource, value)| {
                let v = if is_expression(value) {
                    ReservedValue::Expr(
                        Expr::compile(value)
                            .map_err(|e| eval_err(format!("{field}[{resource}]: {e}")))?,
                    )
                } else {
                    ReservedValue::Quantity(value.clone())
                };
                Ok((resource.clone(), v))
            })
            .collect::<Result<_, EvalError>>()?;
        Ok(Reserved { field, entries })
    }

    /// The map as kubelet is given it for one type: expressions evaluated against `vars` and
    /// written with their resource's unit; an error names `field[resource]` and the type.
    pub fn resolve(&self, vars: &Vars) -> Result<BTreeMap<String, String>, EvalError> {
        self.entries
            .iter()
            .map(|(resource, value)| {
                let text = match value {
                    ReservedValue::Quantity(q) => q.clone(),
                    ReservedValue::Expr(expr) => {
                        let n = expr.reservation(vars).map_err(|e| {
                            eval_err(format!(
                                "{}[{resource}] on {}: {e}",
                                self.field, vars.instance_type
                            ))
                        })?;
                        format!("{n}{}", reserved_unit(resource).1)
                    }
                };
                Ok((resource.clone(), text))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        // m5.large: 2 vCPUs, 8 GiB, 3 ENIs of 10 addresses, 29 pods by default.
        Vars {
            vcpus: 2,
            memory_mib: 8192,
            default_enis: Some(3),
            ips_per_eni: Some(10),
            max_pods: 29,
            instance_type: "m5.large".into(),
        }
    }

    fn run(src: &str) -> Result<i64, String> {
        let e = Expr::compile(src).map_err(|e| format!("compile: {e}"))?;
        e.eval(&vars()).map_err(|e| format!("eval: {e}"))
    }

    #[test]
    fn the_formulas_users_write_give_the_numbers_by_hand() {
        assert_eq!(run("((default_enis - 1) * (ips_per_eni - 1)) + 2"), Ok(20));
        assert_eq!(run("default_enis * (ips_per_eni - 1) + 2"), Ok(29));
        assert_eq!(
            run("min(250, ((default_enis - 1) * (ips_per_eni - 1)) * 16 + 2)"),
            Ok(250)
        );
        assert_eq!(run("min(110, max_pods)"), Ok(29));
        assert_eq!(run("11 * max_pods + 255"), Ok(574));
        assert_eq!(run("max(100, memory_mib / 64)"), Ok(128));
        assert_eq!(run("max(60, vcpus * 30)"), Ok(60));
        assert_eq!(
            run("memory_mib / 100"),
            Ok(81),
            "integer division truncates"
        );
        assert_eq!(
            run("double(memory_mib) * 0.015"),
            Ok(122),
            "double truncated"
        );
        assert_eq!(run("max(vcpus, 60.5)"), Ok(60));
        assert_eq!(run("min(110.5, max_pods)"), Ok(29));
        assert_eq!(run("max(1, 2, 3, 2)"), Ok(3));
        assert_eq!(run("int(7.9) + 1"), Ok(8));
        assert_eq!(run("-5 + 10"), Ok(5));
        assert_eq!(run("10 - -5"), Ok(15));
        assert_eq!(run("2 + 3 * 4 - 6 / 2 % 2"), Ok(13), "CEL precedence");
        assert_eq!(run("1e3"), Ok(1000));
    }

    #[test]
    fn conditions_choose_by_the_type() {
        assert_eq!(
            run(r#"instance_type == "m5.large" ? vcpus * 2 : vcpus"#),
            Ok(4)
        );
        assert_eq!(run(r#"instance_type != 'm5.large' ? 1 : 2"#), Ok(2));
        assert_eq!(
            run("vcpus >= 4 && memory_mib > 8000 || max_pods < 30 ? 1 : 0"),
            Ok(1)
        );
        assert_eq!(run("!(vcpus > 1) ? 1 : 0"), Ok(0));
        assert_eq!(run("vcpus == 2.0 ? 7 : 8"), Ok(7), "int and double compare");
        assert_eq!(run("true ? 1 : 2"), Ok(1));
    }

    #[test]
    fn what_cannot_give_a_number_is_refused_when_compiled() {
        for (src, says) in [
            ("", "empty"),
            ("vcpus * 0.5", "convert one with double"),
            ("vcpus +", "ends where a value"),
            ("(vcpus", "expected \")\""),
            ("vcpus)", "unexpected \")\""),
            ("cores * 2", "unknown variable \"cores\""),
            ("pow(2, 3)", "unknown function \"pow\""),
            ("instance_type", "gives a string"),
            ("vcpus > 2", "gives a bool"),
            ("vcpus > 2 ? 1 : 2.0", "same type"),
            ("vcpus ? 1 : 2", "must be a bool"),
            ("instance_type + 1", "needs numbers"),
            ("instance_type < 2", "cannot compare"),
            ("1.5 % 2.0", "% needs integers"),
            ("min()", "at least one"),
            ("double(1, 2)", "one argument"),
            ("2Gi", "may not carry a unit"),
            ("99999999999999999999", "64 bits"),
            ("\"a\\\"b\"", "escape"),
            ("'open", "unterminated"),
            ("vcpus # 2", "unexpected character"),
            ("!vcpus", "needs a bool"),
            ("-instance_type", "cannot negate"),
        ] {
            let err = Expr::compile(src).expect_err(src).message;
            assert!(err.contains(says), "{src:?}: {err}");
        }
    }

    #[test]
    fn size_and_nesting_are_bounded_before_work() {
        let long = "1+".repeat(MAX_LEN / 2) + "1";
        assert!(
            Expr::compile(&long)
                .unwrap_err()
                .message
                .contains("bytes long")
        );
        let nested = "(".repeat(200) + "1" + &")".repeat(200);
        assert!(
            Expr::compile(&nested)
                .unwrap_err()
                .message
                .contains("nests deeper")
        );
        let terms = "1+".repeat(300) + "1";
        let err = Expr::compile(&terms).unwrap_err().message;
        assert!(err.contains("terms") || err.contains("tokens"), "{err}");
        let unary = "-".repeat(100) + "1";
        assert!(
            Expr::compile(&unary)
                .unwrap_err()
                .message
                .contains("nests deeper")
        );
        let chain = "1+".repeat(69) + "1";
        assert!(
            Expr::compile(&chain)
                .unwrap_err()
                .message
                .contains("nests deeper"),
            "a left-leaning chain is as deep as it is long"
        );
        assert_eq!(run(&("1+".repeat(20) + "1")), Ok(21));
    }

    #[test]
    fn evaluation_errors_are_errors_not_wrapped_numbers() {
        for (src, says) in [
            ("100 / (vcpus - vcpus)", "/ by zero"),
            ("100 % (vcpus - 2)", "% by zero"),
            ("9223372036854775807 + vcpus", "overflows"),
            ("-9223372036854775808 - vcpus", "overflows"),
            ("(-9223372036854775807 - 1) / -1", "overflows"),
            ("9223372036854775807 * 2", "overflows"),
            ("100.0 / 0.0", "not a finite number"),
            ("0.0 / 0.0", "not a finite number"),
            ("1e300 * 1e300", "not a finite number"),
            ("int(1e19)", "beyond a 64-bit integer"),
            ("-(-9223372036854775808)", "overflows"),
        ] {
            assert!(
                run(src).unwrap_err().contains(says),
                "{src}: {:?}",
                run(src)
            );
        }
        assert_eq!(run("-9223372036854775808 + 0"), Ok(i64::MIN));
        let no_net = Vars {
            default_enis: None,
            ips_per_eni: None,
            ..vars()
        };
        let e = Expr::compile("default_enis * 2").unwrap();
        assert!(
            e.eval(&no_net)
                .unwrap_err()
                .message
                .contains("no network facts")
        );
        assert_eq!(
            Expr::compile("vcpus > 1 || default_enis > 1 ? 1 : 0")
                .unwrap()
                .eval(&no_net),
            Ok(1),
            "|| stops at the first true"
        );
    }

    #[test]
    fn reservations_keep_quantities_and_write_expressions_in_their_unit() {
        let map = BTreeMap::from([
            ("cpu".to_string(), "max(60, vcpus * 30)".to_string()),
            ("memory".to_string(), "11 * max_pods + 255".to_string()),
            ("ephemeral-storage".to_string(), "1 + 1".to_string()),
            ("pid".to_string(), "max_pods * 10".to_string()),
        ]);
        let resolve = |field, map: &BTreeMap<String, String>| {
            Reserved::compile(field, map).and_then(|r| r.resolve(&vars()))
        };
        let got = resolve("kubeReserved", &map).unwrap();
        assert_eq!(got["cpu"], "60m");
        assert_eq!(got["memory"], "574Mi");
        assert_eq!(got["ephemeral-storage"], "2Gi");
        assert_eq!(got["pid"], "290");
        let quantities = BTreeMap::from([
            ("cpu".to_string(), "100".to_string()),
            ("memory".to_string(), "256Mi".to_string()),
        ]);
        assert_eq!(
            resolve("kubeReserved", &quantities).unwrap(),
            quantities,
            "quantities, even bare numbers, are kept as written"
        );
        let negative = BTreeMap::from([("cpu".to_string(), "vcpus - 100".to_string())]);
        let err = resolve("systemReserved", &negative).unwrap_err();
        assert!(
            err.message.contains("systemReserved[cpu] on m5.large")
                && err
                    .message
                    .contains("gave -98; a reservation may not be negative"),
            "{err}"
        );
        let bad = BTreeMap::from([("memory".to_string(), "pods_max * 2".to_string())]);
        let err = Reserved::compile("kubeReserved", &bad).unwrap_err();
        assert!(
            err.message.contains("kubeReserved[memory]") && err.message.contains("pods_max"),
            "compile errors name the entry: {err}"
        );
        assert!(is_expression("vcpus * 30"));
        assert!(!is_expression("1.5Gi"));
        assert!(!is_expression("100"));
        assert!(!is_expression("9Ei"), "out of range, still a quantity");
        assert!(!is_expression("1e3"));
        assert!(is_expression("1e3 + 1"));
        assert!(is_expression("max_pods"));
    }
}
