//! The user reference pages under `docs/reference/` are generated from the code (clap commands,
//! metric registries) by each binary's tests, which fail when a checked-in page differs from
//! what the code says, so the pages cannot drift. `ADZE_REGENERATE_DOCS=1` makes the same
//! tests rewrite the pages instead (`docs/reference/generate.sh` runs them all).
//!
//! A page several crates contribute to (`cli.md`, `metrics.md`) is split into sections marked
//! `<!-- BEGIN generated NAME -->` … `<!-- END generated NAME -->`, one per crate.

use std::path::Path;

/// The environment variable that turns the staleness checks into regeneration.
pub const REGENERATE: &str = "ADZE_REGENERATE_DOCS";

/// The command every stale-page failure names.
pub const HOW_TO_REGENERATE: &str = "docs/reference/generate.sh";

fn regenerate() -> bool {
    std::env::var_os(REGENERATE).is_some_and(|v| v == "1")
}

/// Escapes text for one Markdown table cell.
pub fn cell(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // Outside code spans, `<name>` would be read as an HTML tag and vanish.
    let escaped: Vec<String> = one_line
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 0 {
                part.replace('<', "&lt;").replace('>', "&gt;")
            } else {
                part.to_string()
            }
        })
        .collect();
    escaped.join("`").replace('|', "\\|")
}

/// Checks (or, with [`REGENERATE`], rewrites) the section `name` of the page at `path`.
/// Panics when the section is missing or differs, naming the command that regenerates it.
pub fn sync_section(path: &Path, name: &str, body: &str) {
    sync_section_as(path, name, body, regenerate());
}

fn sync_section_as(path: &Path, name: &str, body: &str, regenerate: bool) {
    let begin = format!("<!-- BEGIN generated {name} -->\n");
    let end = format!("<!-- END generated {name} -->\n");
    let page = std::fs::read_to_string(path).unwrap_or_default();
    let body = if body.ends_with('\n') {
        body.to_string()
    } else {
        format!("{body}\n")
    };
    let span = page
        .find(&begin)
        .and_then(|b| page[b..].find(&end).map(|e| (b, b + e + end.len())));
    let want = match span {
        Some((b, e)) => format!("{}{begin}{body}{end}{}", &page[..b], &page[e..]),
        None => format!("{page}{begin}{body}{end}"),
    };
    if regenerate {
        if want != page {
            std::fs::write(path, &want)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        }
        return;
    }
    assert!(
        want == page,
        "{} is stale: section {name:?} is not what the code says. Regenerate it with \
         `{HOW_TO_REGENERATE}` (or `{REGENERATE}=1 cargo test` on this test) and commit it.",
        path.display()
    );
}

/// The check every binary's `cli_reference_is_current` test makes: its section of
/// docs/reference/cli.md (found from the calling crate's `CARGO_MANIFEST_DIR`) is what clap
/// says about `cmd`.
pub fn check_cli_section(manifest_dir: &str, name: &str, cmd: &clap::Command) {
    let page = Path::new(manifest_dir).join("../docs/reference/cli.md");
    sync_section(&page, name, &command_markdown(cmd));
}

/// Checks (or, with [`REGENERATE`], rewrites) the whole page at `path`.
pub fn sync_page(path: &Path, text: &str) {
    let page = std::fs::read_to_string(path).unwrap_or_default();
    if regenerate() {
        if page != text {
            std::fs::write(path, text)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        }
        return;
    }
    assert!(
        page == text,
        "{} is stale: it is not what the code says. Regenerate it with \
         `{HOW_TO_REGENERATE}` (or `{REGENERATE}=1 cargo test` on this test) and commit it.",
        path.display()
    );
}

/// The Markdown reference of `cmd` and its subcommands: one table of flags per command.
/// Hidden arguments (renamed flags kept only to be refused) are left out.
pub fn command_markdown(cmd: &clap::Command) -> String {
    let mut out = String::new();
    command_section(cmd, cmd.get_name(), &mut out);
    while out.contains("\n\n\n") {
        out = out.replace("\n\n\n", "\n\n");
    }
    out
}

fn command_section(cmd: &clap::Command, path: &str, out: &mut String) {
    out.push_str(&format!("\n### `{path}`\n\n"));
    let about = cmd
        .get_long_about()
        .or(cmd.get_about())
        .map(|a| a.to_string())
        .unwrap_or_default();
    for para in about.split("\n\n") {
        let para = sentence(&para.split_whitespace().collect::<Vec<_>>().join(" "));
        if !para.is_empty() {
            out.push_str(&format!("{para}\n\n"));
        }
    }
    let subs: Vec<&clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .collect();
    if !subs.is_empty() {
        out.push_str("Subcommands: ");
        let names: Vec<String> = subs.iter().map(|s| format!("`{}`", s.get_name())).collect();
        out.push_str(&names.join(", "));
        out.push_str(".\n\n");
    }
    let args: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_long(), Some("help" | "version")))
        .collect();
    if !args.is_empty() {
        out.push_str("| Flag | Value | Default | Environment | Description |\n");
        out.push_str("|---|---|---|---|---|\n");
        for arg in args {
            out.push_str(&arg_row(arg));
        }
        out.push('\n');
    }
    for sub in subs {
        command_section(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

/// clap drops the full stop of a one-line doc comment; the tables read as sentences.
fn sentence(text: &str) -> String {
    let text = text.trim_end();
    if text.is_empty() || text.ends_with(['.', '!', '?', ':']) {
        text.to_string()
    } else {
        format!("{text}.")
    }
}

fn arg_row(arg: &clap::Arg) -> String {
    let takes_value = arg.get_num_args().is_none_or(|n| n.takes_values())
        && !matches!(
            arg.get_action(),
            clap::ArgAction::SetTrue | clap::ArgAction::SetFalse | clap::ArgAction::Count
        );
    let value_name = arg
        .get_value_names()
        .map(|v| {
            v.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
    let flag = match (arg.get_short(), arg.get_long()) {
        (Some(s), Some(l)) => format!("`-{s}`, `--{l}`"),
        (None, Some(l)) => format!("`--{l}`"),
        (Some(s), None) => format!("`-{s}`"),
        (None, None) => format!("`<{value_name}>` (positional)"),
    };
    let possible: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|p| !p.is_hide_set())
        .map(|p| format!("`{}`", p.get_name()))
        .collect();
    let value = if !takes_value {
        match arg.get_action() {
            clap::ArgAction::Count => "repeatable switch".to_string(),
            _ => "switch".to_string(),
        }
    } else if !possible.is_empty() {
        possible.join(", ")
    } else {
        let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1)
            || matches!(arg.get_action(), clap::ArgAction::Append);
        if many {
            format!("`{value_name}`…")
        } else {
            format!("`{value_name}`")
        }
    };
    let mut default: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| format!("`{}`", v.to_string_lossy()))
        .collect();
    if default.is_empty() && takes_value && arg.is_required_set() {
        default.push("required".into());
    }
    let env = arg
        .get_env()
        .map(|e| format!("`{}`", e.to_string_lossy()))
        .unwrap_or_default();
    let help = sentence(
        &arg.get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default(),
    );
    // What each possible value means, when the values say.
    let meanings: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|p| !p.is_hide_set())
        .filter_map(|p| {
            p.get_help()
                .map(|h| format!("`{}`: {}", p.get_name(), sentence(&h.to_string())))
        })
        .collect();
    let help = if meanings.is_empty() {
        help
    } else {
        format!("{help} {}", meanings.join(" "))
    };
    format!(
        "| {flag} | {value} | {} | {env} | {} |\n",
        default.join(", "),
        cell(&help)
    )
}

/// The Markdown table of the metric families in `exposition` (a registry's text, Prometheus
/// or OpenMetrics): name as PromQL selects it, type, labels and help. Labels are read from the
/// samples, so every family must have at least one series; panics naming the ones without.
pub fn metrics_markdown(exposition: &str) -> String {
    use std::collections::{BTreeMap, BTreeSet};
    let mut kinds: BTreeMap<String, String> = BTreeMap::new();
    let mut helps: BTreeMap<String, String> = BTreeMap::new();
    let mut labels: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in exposition.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            kinds.insert(name.to_string(), kind.to_string());
        } else if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            helps.insert(name.to_string(), help.to_string());
        } else if !line.starts_with('#') && !line.is_empty() {
            let name_end = line.find(['{', ' ']).unwrap_or(line.len());
            let sample = &line[..name_end];
            let family = kinds
                .keys()
                .filter(|f| {
                    sample == f.as_str()
                        || ["_total", "_bucket", "_sum", "_count", "_created"]
                            .iter()
                            .any(|s| sample.strip_suffix(s) == Some(f.as_str()))
                })
                .max_by_key(|f| f.len())
                .cloned();
            let Some(family) = family else { continue };
            let set = labels.entry(family).or_default();
            if let Some(body) = line[name_end..]
                .strip_prefix('{')
                .and_then(|b| b.split_once('}'))
                .map(|(b, _)| b)
            {
                for pair in body.split("\",") {
                    if let Some((k, _)) = pair.split_once('=') {
                        let k = k.trim_start_matches(',').trim();
                        if !k.is_empty() && k != "le" {
                            set.insert(k.to_string());
                        }
                    }
                }
            }
        }
    }
    let unsampled: Vec<&String> = kinds.keys().filter(|f| !labels.contains_key(*f)).collect();
    assert!(
        unsampled.is_empty(),
        "families without a series, whose labels cannot be documented (record one sample of \
         each in the reference test): {unsampled:?}"
    );
    let mut out = String::from("| Metric | Type | Labels | Description |\n|---|---|---|---|\n");
    for (family, kind) in &kinds {
        let shown = if kind == "counter" && !family.ends_with("_total") {
            format!("{family}_total")
        } else {
            family.clone()
        };
        let names: Vec<String> = labels[family].iter().map(|l| format!("`{l}`")).collect();
        out.push_str(&format!(
            "| `{shown}` | {kind} | {} | {} |\n",
            names.join(", "),
            cell(helps.get(family).map(String::as_str).unwrap_or(""))
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction, Command};

    #[test]
    fn flags_render_with_value_default_env_and_help() {
        let cmd = Command::new("tool")
            .about("Does things.")
            .arg(
                Arg::new("mode")
                    .long("mode")
                    .env("ADZE_MODE")
                    .value_parser(["a", "b"])
                    .default_value("a")
                    .help("Which | mode."),
            )
            .arg(
                Arg::new("dry")
                    .long("dry-run")
                    .action(ArgAction::SetTrue)
                    .help("Only say."),
            )
            .arg(Arg::new("old").long("old").hide(true))
            .subcommand(Command::new("sub").arg(Arg::new("file").required(true)));
        let md = command_markdown(&cmd);
        assert!(md.contains("### `tool`\n\nDoes things.\n"), "{md}");
        assert!(
            md.contains("| `--mode` | `a`, `b` | `a` | `ADZE_MODE` | Which \\| mode. |"),
            "{md}"
        );
        assert!(
            md.contains("| `--dry-run` | switch |  |  | Only say. |"),
            "{md}"
        );
        assert!(!md.contains("--old"), "hidden flags are left out: {md}");
        assert!(md.contains("### `tool sub`"), "{md}");
        assert!(
            md.contains("| `<FILE>` (positional) | `FILE` | required |"),
            "{md}"
        );
    }

    #[test]
    fn metrics_list_type_labels_and_help_and_need_a_sample() {
        let text = "# HELP x_calls Calls.\n# TYPE x_calls counter\nx_calls_total{op=\"a\",code=\"b\"} 1\n\
                    # HELP x_t Time.\n# TYPE x_t histogram\nx_t_bucket{le=\"1\"} 0\nx_t_sum 0\n# EOF\n";
        let md = metrics_markdown(text);
        assert!(
            md.contains("| `x_calls_total` | counter | `code`, `op` | Calls. |"),
            "{md}"
        );
        assert!(md.contains("| `x_t` | histogram |  | Time. |"), "{md}");
        let empty = std::panic::catch_unwind(|| metrics_markdown("# HELP y Y.\n# TYPE y gauge\n"));
        assert!(empty.is_err(), "a family without a sample is refused");
    }

    #[test]
    fn a_section_is_replaced_in_place_and_a_stale_one_fails() {
        let dir = std::env::temp_dir().join(format!("adze-ref-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let page = dir.join("p.md");
        std::fs::write(
            &page,
            "# T\n<!-- BEGIN generated x -->\nold\n<!-- END generated x -->\ntail\n",
        )
        .unwrap();
        let stale = std::panic::catch_unwind(|| sync_section_as(&page, "x", "new", false));
        let msg = *stale.unwrap_err().downcast::<String>().unwrap();
        assert!(msg.contains(HOW_TO_REGENERATE), "{msg}");
        std::fs::write(
            &page,
            "# T\n<!-- BEGIN generated x -->\nnew\n<!-- END generated x -->\ntail\n",
        )
        .unwrap();
        sync_section_as(&page, "x", "new", false);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
