#!/usr/bin/env bash
# Regenerates docs/reference/*.md from the code and the chart: runs the tests that check the
# pages with ADZE_REGENERATE_DOCS=1, which makes them write the pages instead of comparing.
# The same tests, run without it (`cargo test --workspace`), fail while a page is stale.
set -euo pipefail
cd "$(dirname "$0")/../.."
export ADZE_REGENERATE_DOCS=1
# cli.md: each binary's unit tests (cli_reference_is_current); default features, which build
# every subcommand and flag.
cargo test -p adze-provisioner --bin adze-provisioner cli_reference_is_current
cargo test -p adze-extender --bin adze-extender cli_reference_is_current
cargo test -p adze-agent --bin adze-agent cli_reference_is_current
# crds.md and chart-values.md.
cargo test -p adze-api --test reference_docs
# metrics.md: metric families and event reasons.
cargo test -p adze-provisioner --test reference_docs
cargo test -p adze-extender --test reference_docs
cargo test -p adze-agent --test reference_docs
echo "docs/reference regenerated; review with git diff docs/reference"
