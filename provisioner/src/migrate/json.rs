//! Concatenated JSON values read under a budget counted while reading, so that a kubectl
//! `List` of far more items than `migrate` accepts is refused as soon as the limit is passed,
//! not after the whole input has been built in memory (a 100,000-item list took seconds to
//! parse before its length could be checked).
//!
//! Two counts: the objects the input will flatten to (elements of a top-level array, and of
//! the `items` array of a top-level object, as kubectl prints several objects), checked against
//! [`super::MAX_OBJECTS`]; and JSON values in all, against the YAML reader's
//! [`crate::simulate::yaml::MAX_TOTAL_NODES`], so a deep or wide single object is bounded too.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::simulate::yaml::MAX_TOTAL_NODES;

/// Why [`values`] stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum JsonError {
    /// Not JSON (the caller then reads the input as YAML).
    Syntax,
    /// More than `MAX_OBJECTS` objects; `path` names the value and list being read.
    TooManyObjects { path: String },
    /// More than [`MAX_TOTAL_NODES`] JSON values in all.
    TooManyNodes,
}

/// Counters shared by every level of the reader.
struct Budget {
    objects: Cell<usize>,
    nodes: Cell<usize>,
    /// Set when a limit stopped the reader (serde's error then only carries text).
    over: Cell<Option<JsonError>>,
    max_objects: usize,
}

impl Budget {
    fn node<E: de::Error>(&self) -> Result<(), E> {
        let n = self.nodes.get() + 1;
        self.nodes.set(n);
        if n > MAX_TOTAL_NODES {
            self.over.set(Some(JsonError::TooManyNodes));
            return Err(E::custom("over the node budget"));
        }
        Ok(())
    }

    fn object<E: de::Error>(&self, path: impl FnOnce() -> String) -> Result<(), E> {
        let n = self.objects.get() + 1;
        self.objects.set(n);
        if n > self.max_objects {
            self.over
                .set(Some(JsonError::TooManyObjects { path: path() }));
            return Err(E::custom("over the object budget"));
        }
        Ok(())
    }
}

/// Every JSON value of `input`, in order, or the first limit passed.
pub fn values(input: &str, max_objects: usize) -> Result<Vec<Value>, JsonError> {
    let budget = Budget {
        objects: Cell::new(0),
        nodes: Cell::new(0),
        over: Cell::new(None),
        max_objects,
    };
    let mut out = Vec::new();
    let mut de = serde_json::Deserializer::from_str(input);
    loop {
        // End of input after whitespace: done.
        if de.end().is_ok() {
            return Ok(out);
        }
        let index = out.len() + 1;
        let seed = Top {
            budget: &budget,
            index,
        };
        match seed.deserialize(&mut de) {
            Ok(v) => out.push(v),
            Err(_) => return Err(budget.over.take().unwrap_or(JsonError::Syntax)),
        }
    }
}

/// A top-level value: its array elements, or the items of its `items` array, are objects.
struct Top<'b> {
    budget: &'b Budget,
    index: usize,
}

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor {
            budget: self.budget,
            counted: Some(Counted::Top(self.index)),
        })
    }
}

/// Which elements of a sequence are objects of the input (and how to name the list).
#[derive(Clone, Copy)]
enum Counted {
    /// The elements of top-level value `n`, or of its `items`.
    Top(usize),
    /// The elements of `items` of top-level value `n`.
    Items(usize),
}

struct ValueVisitor<'b> {
    budget: &'b Budget,
    /// Set for a top-level value and for the `items` of a top-level object.
    counted: Option<Counted>,
}

impl<'b> ValueVisitor<'b> {
    fn plain(budget: &'b Budget) -> Self {
        ValueVisitor {
            budget,
            counted: None,
        }
    }
}

impl<'de> DeserializeSeed<'de> for ValueVisitor<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueVisitor<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.budget.node()?;
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.budget.node()?;
        Ok(Value::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.budget.node()?;
        Ok(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.budget.node()?;
        // As serde_json's own Value: a non-finite number is null.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.budget.node()?;
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.budget.node()?;
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.budget.node()?;
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.budget.node()?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(ValueVisitor::plain(self.budget))? {
            // Counted once read: at most one element past the limit is parsed.
            if let Some(counted) = self.counted {
                let at = out.len();
                self.budget.object(|| match counted {
                    Counted::Top(n) => format!("JSON value {n}[{at}]"),
                    Counted::Items(n) => format!("JSON value {n}.items[{at}]"),
                })?;
            }
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.budget.node()?;
        // A top-level object's `items` are objects of the input when it is a list; which it
        // is, its `kind` may only say after them, so every top-level `items` array counts
        // (no Karpenter or Adze object has a top-level field of that name).
        let items = match self.counted {
            Some(Counted::Top(n)) => Some(Counted::Items(n)),
            _ => None,
        };
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let seed = ValueVisitor {
                budget: self.budget,
                counted: if key == "items" { items } else { None },
            };
            let value = map.next_value_seed(seed)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_concatenated_values_as_serde_json_does() {
        let input = r#"{"a": [1, 2.5, "x", null, true]} [{"b": {}}]  "#;
        let got = values(input, 10).unwrap();
        let want: Vec<Value> = serde_json::Deserializer::from_str(input)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got, want);
    }

    #[test]
    fn a_long_list_is_refused_at_the_first_item_past_the_limit() {
        let items: Vec<String> = (0..50).map(|i| format!(r#"{{"n": {i}}}"#)).collect();
        let list = format!(r#"{{"items": [{}], "kind": "List"}}"#, items.join(","));
        assert_eq!(
            values(&list, 10),
            Err(JsonError::TooManyObjects {
                path: "JSON value 1.items[10]".into()
            })
        );
        let array = format!("{{}} [{}]", items.join(","));
        assert_eq!(
            values(&array, 10),
            Err(JsonError::TooManyObjects {
                path: "JSON value 2[10]".into()
            })
        );
        // Exactly at the limit: read.
        let ten = format!(r#"{{"items": [{}]}}"#, items[..10].join(","));
        assert_eq!(values(&ten, 10).unwrap().len(), 1);
    }

    #[test]
    fn nested_items_are_not_objects_of_the_input() {
        let inner: Vec<String> = (0..20).map(|i| i.to_string()).collect();
        let input = format!(r#"{{"spec": {{"items": [{}]}}}}"#, inner.join(","));
        assert_eq!(values(&input, 5).unwrap().len(), 1);
    }

    #[test]
    fn not_json_is_a_syntax_error() {
        assert_eq!(values("{kind: List", 10), Err(JsonError::Syntax));
        assert_eq!(values("{} trailing", 10), Err(JsonError::Syntax));
    }
}
