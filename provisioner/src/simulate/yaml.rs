//! User-supplied YAML streams (scenario files, `migrate` input) read under fixed budgets, so
//! that a small hostile file — an alias bomb, 100,000 nested brackets, a huge document count —
//! is refused in milliseconds with a message instead of exhausting memory or the stack.
//!
//! The parser is `serde-saphyr` (pure Rust, maintained), which enforces per-document budgets
//! (depth, nodes, anchors, alias replay); this module adds the whole-stream ones (input size,
//! documents, nodes over all documents). Documents are numbered from 1 counting empty ones,
//! as a person counts the `---` separators: the stream is cut at document markers (`---`,
//! `...` at the start of a line, which YAML forbids inside any scalar) and each piece is
//! parsed alone. YAML anchors never cross documents, so this changes no document's meaning.
//!
//! Values are read as `serde_json::Value`; scalars follow YAML 1.2's core schema, as
//! `serde_yaml` did (`yes`, `on`, `0755` and `1_000` stay strings).

use serde_json::Value;
use thiserror::Error;

/// Largest input read, in bytes. A 20,000-pod scenario written one Pod per document is about
/// 10 MiB; a live cluster's snapshot carries more per pod (uid, tolerations, defaults the API
/// fills in): 40,000 pods were 38 MiB. The parsed size is bounded by [`MAX_TOTAL_NODES`].
pub const MAX_INPUT_BYTES: usize = 128 << 20;
/// Most documents in one stream (empty ones included).
pub const MAX_DOCUMENTS: usize = 200_000;
/// Most YAML nodes (mappings, sequences, scalars, after alias expansion) over all documents:
/// bounds the memory the parsed values take.
pub const MAX_TOTAL_NODES: usize = 8_000_000;
/// Most nesting in one document. Kubernetes objects nest about 12 deep.
pub const MAX_DEPTH: usize = 64;
/// Most nodes one document may spell out.
pub const MAX_DOCUMENT_NODES: usize = 250_000;
/// Most nodes aliases may copy into one document: a real file reuses a few small blocks;
/// an alias bomb asks for billions.
pub const MAX_ALIAS_REPLAY: usize = 100_000;

#[derive(Debug, Error)]
pub enum YamlError {
    /// The parser's message (with line and column within the document).
    #[error("not valid YAML: {0}")]
    Syntax(String),
    #[error("the input is {size} bytes; at most {MAX_INPUT_BYTES} are read")]
    TooLarge { size: usize },
    #[error("more than {MAX_DOCUMENTS} documents")]
    TooManyDocuments,
    #[error("the documents hold more than {MAX_TOTAL_NODES} YAML nodes in all (aliases expanded)")]
    TooManyNodes,
}

fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_depth: MAX_DEPTH,
            max_nodes: MAX_DOCUMENT_NODES,
            max_documents: 2,
            max_events: 4 * MAX_DOCUMENT_NODES,
        },
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: MAX_ALIAS_REPLAY,
        },
        emit_comments: false,
        strict_booleans: true,
        leading_zero_numbers_as_strings: true,
        underscored_numbers_as_strings: true,
        with_snippet: false,
    }
}

/// A line that is a document marker: `---` or `...`, then the end of the line or a space.
fn marker(line: &str, m: &str) -> bool {
    line.strip_prefix(m)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// Text before the first `---` (or after a `...`) is a document only if it holds something
/// other than blank lines, comments and directives.
fn has_content(text: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim_start_matches('\u{feff}').trim();
        !(t.is_empty() || t.starts_with('#') || l.starts_with('%') || marker(l, "..."))
    })
}

/// The pieces of `input` that are documents, in order.
fn split(input: &str) -> Result<Vec<&str>, YamlError> {
    let mut docs = Vec::new();
    let (mut start, mut explicit) = (0, false);
    let push = |piece: &'_ str, explicit: bool, docs: &mut Vec<_>| {
        if explicit || has_content(piece) {
            if docs.len() == MAX_DOCUMENTS {
                return Err(YamlError::TooManyDocuments);
            }
            docs.push((
                piece.as_ptr() as usize - input.as_ptr() as usize,
                piece.len(),
            ));
        }
        Ok(())
    };
    let mut pos = 0;
    for line in input.split_inclusive('\n') {
        let line_start = pos;
        pos += line.len();
        if marker(line, "---") {
            push(&input[start..line_start], explicit, &mut docs)?;
            (start, explicit) = (line_start, true);
        } else if marker(line, "...") {
            push(&input[start..pos], explicit, &mut docs)?;
            (start, explicit) = (pos, false);
        }
    }
    push(&input[start..], explicit, &mut docs)?;
    Ok(docs
        .into_iter()
        .map(|(at, len)| &input[at..at + len])
        .collect())
}

/// Nodes in a parsed value (recursion is bounded by [`MAX_DEPTH`]).
fn nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(nodes).sum(),
        Value::Object(o) => o.values().map(|v| 1 + nodes(v)).sum(),
        _ => 0,
    }
}

/// The documents of a YAML stream, each with its number (from 1, empty ones counted); empty
/// and `null` documents are numbered but not yielded. After the first error nothing more is
/// read.
pub struct Documents<'a> {
    pieces: std::vec::IntoIter<&'a str>,
    /// Values of the current piece not yielded yet: a piece is one document, but should the
    /// parser see more in it, they share its number.
    pending: std::vec::IntoIter<Value>,
    index: usize,
    total_nodes: usize,
    done: bool,
}

/// Reads `input` as a stream of YAML documents under the budgets above. An input over
/// [`MAX_INPUT_BYTES`] or [`MAX_DOCUMENTS`] is refused before any document is parsed.
pub fn documents(input: &str) -> Result<Documents<'_>, YamlError> {
    if input.len() > MAX_INPUT_BYTES {
        return Err(YamlError::TooLarge { size: input.len() });
    }
    Ok(Documents {
        pieces: split(input)?.into_iter(),
        pending: Vec::new().into_iter(),
        index: 0,
        total_nodes: 0,
        done: false,
    })
}

impl Iterator for Documents<'_> {
    type Item = (usize, Result<Value, YamlError>);

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            if let Some(value) = self.pending.next() {
                if value.is_null() {
                    continue;
                }
                self.total_nodes += nodes(&value);
                if self.total_nodes > MAX_TOTAL_NODES {
                    self.done = true;
                    return Some((self.index, Err(YamlError::TooManyNodes)));
                }
                return Some((self.index, Ok(value)));
            }
            let piece = self.pieces.next()?;
            self.index += 1;
            let parsed: Result<Vec<Value>, _> =
                serde_saphyr::from_multiple_with_options(piece, options());
            match parsed {
                Ok(values) => self.pending = values.into_iter(),
                Err(e) => {
                    self.done = true;
                    return Some((self.index, Err(YamlError::Syntax(e.to_string()))));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use cpu_time::ThreadTime as Instant;
    use std::time::Duration;

    use super::*;

    fn read(input: &str) -> Vec<(usize, Result<Value, YamlError>)> {
        documents(input).unwrap().collect()
    }

    fn numbers(input: &str) -> Vec<usize> {
        read(input)
            .into_iter()
            .map(|(i, v)| {
                v.unwrap();
                i
            })
            .collect()
    }

    #[test]
    fn documents_are_numbered_as_a_person_counts_them() {
        assert_eq!(numbers("a: 1\n---\nb: 2\n"), [1, 2]);
        assert_eq!(
            numbers("---\n---\nkind: X\n"),
            [2],
            "the empty first document counts"
        );
        assert_eq!(
            numbers("# head\n---\na: 1\n---\n"),
            [1],
            "comments are not a document"
        );
        assert_eq!(numbers("%YAML 1.2\n---\na: 1\n"), [1]);
        assert_eq!(numbers("a: 1\n...\nb: 2\n"), [1, 2]);
        assert_eq!(numbers("a: 1\n...\n# c\n---\nb: 2\n"), [1, 2]);
        assert_eq!(numbers("--- {a: 1}\n--- |\n  text\n---\n"), [1, 2]);
        assert_eq!(
            numbers("a: |\n  ---x\n  --- y\n"),
            [1],
            "indented, not a marker"
        );
        assert_eq!(numbers("a: 1\r\n---\r\nb: 2\r\n"), [1, 2]);
        assert!(numbers("").is_empty());
    }

    #[test]
    fn scalars_follow_the_yaml_1_2_core_schema() {
        let v = read("a: yes\nb: 0755\nc: 1_000\nd: true\ne: 3\nf: 0.5\ng: null\n")
            .remove(0)
            .1
            .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": "yes", "b": "0755", "c": "1_000", "d": true, "e": 3, "f": 0.5, "g": null})
        );
    }

    #[test]
    fn an_alias_bomb_is_refused_quickly() {
        let mut yaml = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..10 {
            let prev = (b'a' + level - 1) as char;
            let this = (b'a' + level) as char;
            let refs = vec![format!("*{prev}"); 10].join(", ");
            yaml += &format!("{this}: &{this} [{refs}]\n");
        }
        let start = Instant::now();
        let (index, result) = read(&yaml).remove(0);
        assert_eq!(index, 1);
        let err = result.unwrap_err().to_string();
        assert!(err.starts_with("not valid YAML:"), "{err}");
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn deep_nesting_is_refused_without_overflowing_the_stack() {
        for yaml in [
            "[".repeat(100_000),
            format!("a: {}1{}", "[".repeat(100_000), "]".repeat(100_000)),
            "- ".repeat(100_000) + "x",
            (0..2_000)
                .map(|i| format!("{}k:\n", " ".repeat(i)))
                .collect(),
        ] {
            let start = Instant::now();
            let (_, result) = read(&yaml).remove(0);
            assert!(result.is_err(), "{}", &yaml[..40]);
            assert!(
                start.elapsed() < Duration::from_secs(2),
                "{:?}",
                start.elapsed()
            );
        }
    }

    #[test]
    fn stream_budgets_are_enforced() {
        let big = "#".repeat(MAX_INPUT_BYTES + 1);
        assert!(matches!(documents(&big), Err(YamlError::TooLarge { .. })));
        let many = "---\n".repeat(MAX_DOCUMENTS + 1);
        assert!(matches!(documents(&many), Err(YamlError::TooManyDocuments)));
    }

    #[test]
    fn reading_stops_after_the_first_error() {
        let docs = read("a: 1\n---\n: : [\n---\nb: 2\n");
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].0, 2);
        assert!(docs[1].1.is_err());
    }
}
