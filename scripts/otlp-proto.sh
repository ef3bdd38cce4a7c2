#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Copies the OTLP trace and metrics definitions the OTLP test decodes with, from the official
# opentelemetry-proto repository (Apache-2.0, their license headers kept), into
# tests/helpers/otlp/proto/, with the commit they came from:
#   scripts/otlp-proto.sh GIT_DIR [COMMIT]
set -euo pipefail
repo=$1
commit=${2:-HEAD}
here=$(cd "$(dirname "$0")/.." && pwd)
out=$here/tests/helpers/otlp/proto
for f in collector/trace/v1/trace_service.proto common/v1/common.proto \
	resource/v1/resource.proto trace/v1/trace.proto \
	collector/metrics/v1/metrics_service.proto metrics/v1/metrics.proto; do
	mkdir -p "$out/opentelemetry/proto/$(dirname "$f")"
	git -C "$repo" show "$commit:opentelemetry/proto/$f" >"$out/opentelemetry/proto/$f"
done
printf 'open-telemetry/opentelemetry-proto %s\n' "$(git -C "$repo" rev-parse "$commit")" >"$out/SOURCE"
