#!/usr/bin/env bash
# Regenerates docs/reference/*.md from the code and the chart: runs the tests that check the
# pages with ADZE_REGENERATE_DOCS=1, which makes them write the pages instead of comparing.
# Without it (`cargo test --workspace`) the same tests fail while a page is stale.
#   cli.md          each binary's cli_reference_is_current unit test (clap's definitions; default
#                   features, which have every subcommand and flag) and crdgen's flag list
#   chart-values.md charts/adze/values.yaml's comments and values.schema.json
#   crds.md         the CRDs the chart installs
#   metrics.md      the metric registries and the event reason list
set -euo pipefail
cd "$(dirname "$0")/../.."
ADZE_REGENERATE_DOCS=1 cargo test -p adze-api -p adze-extender -p adze-agent -p adze-provisioner \
  --test reference_docs --bins reference
echo "docs/reference regenerated; review with: git diff docs/reference"
