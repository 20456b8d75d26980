#!/usr/bin/env python3
"""Checks that every metric the chart's Grafana dashboard and alert rules query is one Adze serves.

  metrics-used.py [--chart DIR] [--manifest FILE]... [--source ROOT] [--list] EXPOSITION...

Queries come from the chart's files (DIR/dashboards/*.json, DIR/rules/*.yaml; default DIR is
charts/adze) and, with --manifest, from rendered objects (a dashboard ConfigMap's JSON, a
PrometheusRule's spec.groups). Served metrics come from EXPOSITION files in the Prometheus text
format or OpenMetrics: a family counts as served when its `# TYPE` or `# HELP` line is there,
with or without samples (a counter nothing has bumped yet is still served); a histogram serves
NAME_bucket, NAME_sum and NAME_count; a counter is known by the name PromQL selects, NAME_total,
whether its TYPE line says NAME_total (0.0.4) or NAME (OpenMetrics).

--source ROOT also reads the metric names the Rust source registers or renders (string literals
naming adze_* families in provisioner/, aws/, extender/, agent/ and metrics/, outside test
modules; a counter is named with its _total) and
fails when the source and the EXPOSITION files disagree, so a committed inventory cannot drift
from the code and a live scrape cannot miss a family the code has. Every used metric is reported
with where it was found.

Exit status: 0 when every used metric is served; 1 naming each unknown metric (and each
disagreement with the source); 2 on bad input.
"""

import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

# PromQL words that are not metric names: functions, aggregations, operators, modifiers.
FUNCTIONS = {
    "abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
    "avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh",
    "count_over_time", "day_of_month", "day_of_week", "day_of_year", "days_in_month", "deg",
    "delta", "deriv", "exp", "floor", "histogram_avg", "histogram_count", "histogram_fraction",
    "histogram_quantile", "histogram_stddev", "histogram_stdvar", "histogram_sum", "holt_winters",
    "double_exponential_smoothing", "hour", "idelta", "increase", "irate", "label_join",
    "label_replace", "last_over_time", "ln", "log10", "log2", "mad_over_time", "max_over_time",
    "min_over_time", "minute", "month", "predict_linear", "present_over_time",
    "quantile_over_time", "rad", "rate", "resets", "round", "scalar", "sgn", "sin", "sinh",
    "sort", "sort_by_label", "sort_by_label_desc", "sort_desc", "sqrt", "stddev_over_time",
    "stdvar_over_time", "sum_over_time", "tan", "tanh", "time", "timestamp", "vector", "year",
    "pi",
}
AGGREGATIONS = {
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk",
    "topk", "quantile", "limitk", "limit_ratio",
}
KEYWORDS = {
    "and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
    "offset", "bool", "atan2", "inf", "nan", "start", "end",
}
NOT_METRICS = FUNCTIONS | AGGREGATIONS | KEYWORDS

TOKEN = re.compile(
    r"""(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)"""
    r"""|(?P<var>\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\[\[[^\]]*\]\])"""
    r"""|(?P<num>(?:0x[0-9a-fA-F]+|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)[a-zA-Z]*)"""
    r"""|(?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)"""
    r"""|(?P<ws>\s+)"""
    r"""|(?P<other>.)""",
    re.S,
)


def metrics_in(expr):
    """The metric names an expression selects: identifiers outside label matchers, ranges and
    label lists that are neither PromQL words nor called as functions."""
    names = set()
    tokens = [(m.lastgroup, m.group()) for m in TOKEN.finditer(expr) if m.lastgroup != "ws"]
    depth_bracket = 0
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        if text == "{" and kind == "other":
            # A selector's matchers: only {__name__="x"} names a metric.
            j = i + 1
            while j < len(tokens) and tokens[j][1] != "}":
                if tokens[j][1] == "__name__" and j + 2 < len(tokens) and tokens[j + 2][0] == "str":
                    if tokens[j + 1][1] == "=":
                        names.add(tokens[j + 2][1][1:-1])
                j += 1
            i = j + 1
            continue
        if text == "[" and kind == "other":
            depth_bracket += 1
        elif text == "]" and kind == "other":
            depth_bracket -= 1
        elif kind == "ident" and depth_bracket == 0:
            nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
            if text in ("by", "without", "on", "ignoring", "group_left", "group_right") and nxt == "(":
                # A label list: skip to its closing parenthesis.
                j = i + 2
                while j < len(tokens) and tokens[j][1] != ")":
                    j += 1
                i = j + 1
                continue
            if text in NOT_METRICS or nxt == "(":
                # Grafana's label_values(metric, label) and query_result(expr) are handled by
                # the caller; anything else called is a function.
                pass
            else:
                names.add(text)
        i += 1
    return names


def grafana_query(q):
    """A templating variable's query: label_values(METRIC{...}, label) names METRIC; metrics(re)
    and label_names() name none; query_result(EXPR) is an expression."""
    q = q.strip()
    m = re.match(r"label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)$", q, re.S)
    if m:
        return metrics_in(m.group(1))
    if re.match(r"(label_values|label_names|metrics)\(", q):
        return set()
    m = re.match(r"query_result\((.*)\)$", q, re.S)
    return metrics_in(m.group(1) if m else q)


def dashboard_queries(dash, where):
    """(where, expr-metrics) for every panel target and templating variable of a dashboard."""
    out = []

    def walk(node, path):
        if isinstance(node, dict):
            if isinstance(node.get("expr"), str) and node["expr"].strip():
                out.append((f"{where}: {path} expr {node['expr']!r}", metrics_in(node["expr"])))
            for k, v in node.items():
                if k != "templating":
                    walk(v, f"{path}.{k}" if path else k)
        elif isinstance(node, list):
            for n, v in enumerate(node):
                title = v.get("title") if isinstance(v, dict) else None
                walk(v, f"{path}[{title or n}]")

    walk(dash, "")
    for var in dash.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        q = var.get("query")
        q = q.get("query", "") if isinstance(q, dict) else (q or "")
        if q:
            out.append((f"{where}: variable ${var.get('name')} query {q!r}", grafana_query(q)))
    return out


def rule_queries(groups, where):
    out = []
    for g in groups or []:
        for r in g.get("rules", []):
            name = r.get("alert") or r.get("record")
            out.append((f"{where}: {g.get('name')}/{name} expr {r['expr']!r}", metrics_in(str(r["expr"]))))
    return out


def load_yaml_all(text):
    import yaml  # only for rules and manifests

    return [d for d in yaml.safe_load_all(text) if d]


def rules_without_yaml(text):
    """The rule groups of a rules file read line by line, for a Python without PyYAML (the e2e
    runner's): `- name:` starts a group, `- alert:`/`- record:` a rule, and `expr:` is a plain,
    quoted or block (`|`, `>-`) scalar."""
    groups, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^- name:\s*(.+)$", line)
        if m:
            groups.append({"name": m.group(1).strip(), "rules": []})
        m = re.match(r"^\s*- (alert|record):\s*(.+)$", line)
        if m and groups:
            groups[-1]["rules"].append({m.group(1): m.group(2).strip()})
        m = re.match(r"^(\s*)expr:\s*(.*)$", line)
        if m and groups and groups[-1]["rules"]:
            indent, value = len(m.group(1)), m.group(2).strip()
            if value[:1] in ("|", ">"):
                body = []
                while i + 1 < len(lines) and (not lines[i + 1].strip() or len(lines[i + 1]) - len(lines[i + 1].lstrip()) > indent):
                    i += 1
                    body.append(lines[i].strip())
                value = " ".join(body)
            elif value[:1] in ("'", '"'):
                value = value[1:-1].replace("''", "'") if value[0] == "'" else json.loads(value)
            groups[-1]["rules"][-1]["expr"] = value
        i += 1
    return groups


def queries_of_chart(chart):
    out = []
    for f in sorted((chart / "dashboards").glob("*.json")):
        out += dashboard_queries(json.loads(f.read_text()), f.relative_to(chart).as_posix())
    for f in sorted((chart / "rules").glob("*.yaml")):
        try:
            docs = load_yaml_all(f.read_text())
        except ImportError:
            docs = [rules_without_yaml(f.read_text())]
        for doc in docs:
            groups = doc.get("groups") if isinstance(doc, dict) else doc
            out += rule_queries(groups, f.relative_to(chart).as_posix())
    return out


def queries_of_manifest(path):
    out = []
    for doc in load_yaml_all(pathlib.Path(path).read_text()):
        kind, name = doc.get("kind"), doc.get("metadata", {}).get("name")
        if kind == "PrometheusRule":
            out += rule_queries(doc.get("spec", {}).get("groups"), f"PrometheusRule/{name}")
        elif kind == "ConfigMap" and str(doc.get("metadata", {}).get("labels", {}).get("grafana_dashboard")) == "1":
            for key, text in (doc.get("data") or {}).items():
                if key.endswith(".json"):
                    out += dashboard_queries(json.loads(text), f"ConfigMap/{name}/{key}")
    return out


def served_families(paths):
    """{series name: (family, file)} from exposition files."""
    served = {}
    for p in paths:
        types = {}
        for line in pathlib.Path(p).read_text().splitlines():
            m = re.match(r"#\s*(TYPE|HELP)\s+([A-Za-z_:][A-Za-z0-9_:]*)(?:\s+(\S+))?", line)
            if m:
                if m.group(1) == "TYPE":
                    types[m.group(2)] = m.group(3) or "untyped"
                else:
                    types.setdefault(m.group(2), None)
                continue
            m = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)[\s{]", line)
            if m and not line.startswith("#"):
                name = m.group(1)
                family = re.sub(r"_(bucket|sum|count|total|created)$", "", name)
                if name not in types and family not in types:
                    types[name] = "untyped"
        for family, kind in types.items():
            if kind == "histogram":
                series = [family + s for s in ("_bucket", "_sum", "_count")]
            elif kind == "summary":
                series = [family, family + "_sum", family + "_count"]
            elif kind == "counter" and not family.endswith("_total"):
                # OpenMetrics names the family without the suffix its samples carry.
                family += "_total"
                series = [family]
            else:
                series = [family]
            for s in series:
                served.setdefault(s, (family, str(p)))
    return served


# ---- the Rust source -----------------------------------------------------------------

RUST_LITERAL = re.compile(
    r"""//[^\n]*|/\*.*?\*/|b?r(?P<h>#*)"(?P<raw>.*?)"(?P=h)|b?"(?P<s>(?:[^"\\]|\\.)*)"|'(?:[^'\\]|\\.)'""",
    re.S,
)
SOURCE_DIRS = ["provisioner/src", "aws/src", "extender/src", "agent/src", "metrics/src"]


def source_names(root):
    """{pattern: file} of adze_* metric names in string literals outside `#[cfg(test)]` modules;
    a format placeholder ({what}) becomes a wildcard."""
    found = {}
    for d in SOURCE_DIRS:
        for f in sorted((root / d).rglob("*.rs")):
            text = f.read_text()
            cut = re.search(r"^\s*#\[cfg\(test\)\]\s*\n\s*mod tests", text, re.M)
            if cut:
                text = text[: cut.start()]
            for m in RUST_LITERAL.finditer(text):
                lit = m.group("raw") if m.group("raw") is not None else m.group("s")
                if lit is None:
                    continue
                for name in re.findall(r"\badze_[a-z0-9_]*(?:\{[a-z_]*\}[a-z0-9_]*)*", lit):
                    found.setdefault(name, f.relative_to(root).as_posix())
    return found


def source_check(root, served):
    """Problems between the source's names and the served families."""
    problems = []
    names = source_names(root)
    families = {fam for fam, _ in served.values()}
    patterns = {}
    for name, f in names.items():
        rx = re.compile(re.sub(r"\\\{[a-z_]*\\\}", "[a-z0-9_]+", re.escape(name)) + "$")
        patterns[name] = (rx, f)
    for name, (rx, f) in sorted(patterns.items()):
        if "{" not in name and name in served:
            continue
        if not any(rx.match(fam) for fam in families):
            problems.append(f"{f} names {name}, which no exposition file serves")
    for fam in sorted(families):
        if not any(rx.match(fam) for rx, _ in patterns.values()):
            problems.append(f"{fam} is in an exposition file but no source file names it")
    return problems, patterns


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("exposition", nargs="+", help="Prometheus text exposition file(s): the served metrics")
    ap.add_argument("--chart", default=str(ROOT / "charts" / "adze"), help="chart whose dashboards/ and rules/ to read")
    ap.add_argument("--no-chart", action="store_true", help="only the --manifest files")
    ap.add_argument("--manifest", action="append", default=[], help="rendered objects (multi-document YAML)")
    ap.add_argument("--source", help="repository root: also check the served families against the Rust source")
    ap.add_argument("--list", action="store_true", help="print every used metric and where it is served")
    args = ap.parse_args()

    try:
        served = served_families(args.exposition)
        queries = [] if args.no_chart else queries_of_chart(pathlib.Path(args.chart))
        for m in args.manifest:
            queries += queries_of_manifest(m)
    except (OSError, ValueError, KeyError) as e:
        print(f"metrics-used: {e}", file=sys.stderr)
        return 2
    if not queries:
        print("metrics-used: no queries found", file=sys.stderr)
        return 2

    problems, patterns = [], {}
    if args.source:
        src_problems, patterns = source_check(pathlib.Path(args.source), served)
        problems += [f"source: {p}" for p in src_problems]

    used = {}
    for where, names in queries:
        if not names:
            problems.append(f"{where} names no metric")
        for n in names:
            used.setdefault(n, []).append(where)
    unknown = sorted(n for n in used if n not in served)
    for n in unknown:
        problems.append(f"unknown metric {n}, used by:\n    " + "\n    ".join(used[n]))

    files = sorted({f for _, f in served.values()})
    if args.list or problems:
        for n in sorted(used):
            fam, f = served.get(n, (None, None))
            in_src = fam is not None and any(rx.match(fam) for rx, _ in patterns.values())
            where = f"served ({f}{', and named in the source' if in_src else ''})" if f else "NOT SERVED"
            print(f"  {n}: {where}; {len(used[n])} use(s)")
    if problems:
        for p in problems:
            print(f"metrics-used: {p}")
        print(f"metrics-used: {len(unknown)} unknown metric(s) of {len(used)} used", file=sys.stderr)
        return 1
    print(f"metrics-used: all {len(used)} metrics in {len(queries)} queries are served "
          f"({len(files)} exposition file(s){'; families agree with the source' if args.source else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
