#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0
// Decodes an OTLP/JSON trace strictly with the official opentelemetry-proto definitions
// (tests/helpers/otlp/proto, scripts/otlp-proto.sh) and protobufjs, an unknown field or
// a wrong type refused, then checks every span, attribute and timestamp against the
// task's record:
//   node check_otlp.js [--metrics] OTLP.json RECORD.json [ATTR=VALUE...]
// ATTR=VALUE: attributes the task's span must carry (the config's otlp_attribute).
// --metrics: the document is the task's figures as OTLP metrics (otlp_metrics):
// every figure of the record a data point of the same value, over the task's life.
// Prints what is wrong, one line each, and exits 1 if anything is.
"use strict";
const fs = require("fs");
const path = require("path");
const protobuf = require(path.join(__dirname, "otlp", "node_modules", "protobufjs"));

const PROTO = path.join(__dirname, "otlp", "proto");
const bad = [];

const root = new protobuf.Root();
root.resolvePath = (origin, target) => path.join(PROTO, target);
const metricsMode = process.argv[2] === "--metrics";
const args = process.argv.slice(metricsMode ? 3 : 2);
root.loadSync("opentelemetry/proto/collector/trace/v1/trace_service.proto");
root.loadSync("opentelemetry/proto/collector/metrics/v1/metrics_service.proto");
root.resolveAll();
const Request = root.lookupType(metricsMode
  ? "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest"
  : "opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest");

// OTLP/JSON: field names in lowerCamelCase, ids as hex, 64-bit integers as decimal
// strings, enums as integers. Converted to protobufjs's JSON form (ids in base64) as
// it is walked; anything the definitions do not have is refused.
function strict(obj, type, where) {
  if (obj === null || typeof obj !== "object" || Array.isArray(obj)) {
    bad.push(`${where}: not an object`);
    return {};
  }
  const out = {};
  for (const [k, v] of Object.entries(obj)) {
    const field = type.fields[k];
    if (!field) {
      bad.push(`${where}.${k}: no such field in ${type.fullName}`);
      continue;
    }
    const one = (x, w) => {
      if (field.resolvedType instanceof protobuf.Type) return strict(x, field.resolvedType, w);
      if (field.resolvedType instanceof protobuf.Enum) {
        if (!Number.isInteger(x) || !Object.values(field.resolvedType.values).includes(x))
          bad.push(`${w}: ${JSON.stringify(x)} is no ${field.resolvedType.name}`);
        return x;
      }
      if (field.type === "bytes") {
        const n = /span_id|spanId/i.test(k) ? 16 : 32;
        if (typeof x !== "string" || !new RegExp(`^[0-9a-f]{${n}}$`).test(x) || /^0+$/.test(x))
          bad.push(`${w}: ${JSON.stringify(x)} is no valid id (${n} hex digits, not all zero)`);
        return Buffer.from(String(x), "hex").toString("base64");
      }
      if (/^(fixed|s?int|uint|sfixed)64$/.test(field.type)) {
        if (typeof x !== "string" || !/^-?[0-9]+$/.test(x))
          bad.push(`${w}: ${JSON.stringify(x)} is no 64-bit integer as a decimal string`);
        return x;
      }
      if (field.type === "string" && typeof x !== "string") bad.push(`${w}: not a string`);
      if (field.type === "double" && typeof x !== "number") bad.push(`${w}: not a number`);
      if (/^(u?int32|fixed32)$/.test(field.type) && !Number.isInteger(x))
        bad.push(`${w}: not an integer`);
      return x;
    };
    if (field.repeated) {
      if (!Array.isArray(v)) bad.push(`${where}.${k}: not an array`);
      out[k] = (Array.isArray(v) ? v : []).map((x, i) => one(x, `${where}.${k}[${i}]`));
    } else {
      out[k] = one(v, `${where}.${k}`);
    }
  }
  return out;
}

const raw = fs.readFileSync(args[0], "utf8");
const recText = fs.readFileSync(args[1], "utf8");
const rec = JSON.parse(recText);
const want = args.slice(2).map((s) => s.split("="));
const doc = strict(JSON.parse(raw), Request, "request");
const first = Request.fromObject(doc);
const err = Request.verify(first);
if (err) bad.push(`verify: ${err}`);
// Decoded as a collector would: the binary form, and back.
const msg = Request.decode(Request.encode(first).finish());
const req = Request.toObject(msg, { longs: String, bytes: String, defaults: false });

const startNs = BigInt(/"start_ns":\s*(\d+)/.exec(recText)[1]);
const ns = (v) => BigInt(v);
const attrs = (list) => {
  const m = new Map();
  for (const a of list || []) {
    const v = a.value;
    m.set(a.key, v.stringValue !== undefined ? v.stringValue
      : v.intValue !== undefined ? String(v.intValue) : v.doubleValue);
  }
  return m;
};
const hex = (b64) => Buffer.from(b64 || "", "base64").toString("hex");
const eq = (what, got, exp) => {
  if (String(got) !== String(exp)) bad.push(`${what}: ${got}, the record: ${exp}`);
};

const result = rec.status === "exited" || rec.status === "ended"
  ? (rec.exit_status === 0 ? "success" : "failure")
  : rec.status === "signaled" || rec.status === "interrupted" ? "cancellation" : "error";
const close = (got, v) => typeof got === "number"
  ? Math.abs(got - v) <= 1e-9 * Math.max(1, Math.abs(v)) : String(got) === String(v);

if (metricsMode) {
  const rm = req.resourceMetrics || [];
  eq("resourceMetrics", rm.length, 1);
  const res = attrs(rm[0] && rm[0].resource && rm[0].resource.attributes);
  eq("resource host.name", res.get("host.name"), rec.host);
  const metrics = (rm[0] && rm[0].scopeMetrics && rm[0].scopeMetrics[0].metrics) || [];
  const byName = new Map(metrics.map((m) => [m.name, m]));
  const endNs = startNs + BigInt(rec.wall_ns);
  let checked = 0;
  for (const [k, v] of Object.entries(rec.metrics)) {
    const m = byName.get("taskprobe." + k);
    if (!m) continue;
    checked++;
    const data = m.sum || m.gauge;
    const dp = (data && data.dataPoints && data.dataPoints[0]) || {};
    if (!data || data.dataPoints.length !== 1) bad.push(`${m.name}: not one data point`);
    const got = dp.asInt !== undefined ? String(dp.asInt) : dp.asDouble;
    if (!close(got, v)) bad.push(`${m.name}: ${got}, the record: ${v}`);
    eq(`${m.name} start`, ns(dp.startTimeUnixNano || 0), startNs);
    eq(`${m.name} time`, ns(dp.timeUnixNano || 0), endNs);
    if (m.sum && !(m.sum.isMonotonic && m.sum.aggregationTemporality === 2))
      bad.push(`${m.name}: a counter not a cumulative monotonic sum`);
    const da = attrs(dp.attributes);
    eq(`${m.name} run id`, da.get("cicd.pipeline.task.run.id"), rec.id);
    eq(`${m.name} run result`, da.get("cicd.pipeline.task.run.result"), result);
    for (const [a, x] of want) eq(`${m.name} ${a}`, da.get(a), x);
  }
  eq("metrics", metrics.length, checked);
  for (const k of ["cpu.time_ns", "proc.execs", "mem.peak_bytes", "wall_ns"])
    if (rec.metrics[k] !== undefined && !byName.has("taskprobe." + k))
      bad.push(`no taskprobe.${k} among the metrics`);
  if (!checked) bad.push("no figure of the record among the metrics");
  console.log(`${metrics.length} metrics, ${checked} figures checked`);
  for (const b of bad) console.log(b);
  process.exit(bad.length ? 1 : 0);
}

const rs = req.resourceSpans || [];
eq("resourceSpans", rs.length, 1);
const res = attrs(rs[0] && rs[0].resource && rs[0].resource.attributes);
eq("resource host.name", res.get("host.name"), rec.host);
eq("resource cicd.worker.name", res.get("cicd.worker.name"), rec.host);
const spans = (rs[0] && rs[0].scopeSpans && rs[0].scopeSpans[0].spans) || [];
const phases = rec.phases || [];
eq("spans", spans.length, 1 + phases.length);
const task = spans[0] || {};
eq("task span name", task.name, "cicd.pipeline.task.run");
eq("task span start", ns(task.startTimeUnixNano || 0), startNs);
eq("task span end", ns(task.endTimeUnixNano || 0), startNs + BigInt(rec.wall_ns));
const ta = attrs(task.attributes);
eq("cicd.pipeline.task.run.id", ta.get("cicd.pipeline.task.run.id"), rec.id);
eq("cicd.pipeline.task.run.result", ta.get("cicd.pipeline.task.run.result"), result);
eq("status code", task.status && task.status.code, result === "success" ? 1 : 2);
for (const [k, v] of want) eq(k, ta.get(k), v);
let figures = 0;
for (const [k, v] of Object.entries(rec.metrics)) {
  if (!ta.has("taskprobe." + k)) continue;
  figures++;
  const got = ta.get("taskprobe." + k);
  if (typeof got === "number" ? Math.abs(got - v) > 1e-9 * Math.max(1, Math.abs(v)) : String(got) !== String(v))
    bad.push(`taskprobe.${k}: ${got}, the record: ${v}`);
}
for (const k of ["cpu.time_ns", "proc.execs", "mem.peak_bytes", "io.write_bytes"])
  if (!ta.has("taskprobe." + k)) bad.push(`no taskprobe.${k} on the task's span`);
const ev = rec.events || [];
eq("span events", (task.events || []).length, ev.length);
ev.forEach((e, i) => {
  const se = (task.events || [])[i] || {};
  eq(`event ${i} name`, se.name, e.kind);
  eq(`event ${i} time`, ns(se.timeUnixNano || 0), startNs + BigInt(e.t_ms) * 1000000n);
  eq(`event ${i} detail`, attrs(se.attributes).get("taskprobe.event.detail"), e.detail);
});
const traceId = hex(task.traceId);
phases.forEach((p, i) => {
  const s = spans[1 + i] || {};
  eq(`phase ${i} name`, s.name, p.name);
  eq(`phase ${i} trace`, hex(s.traceId), traceId);
  const s0 = startNs + BigInt(p.start_ms) * 1000000n;
  eq(`phase ${i} start`, ns(s.startTimeUnixNano || 0), s0);
  eq(`phase ${i} end`, ns(s.endTimeUnixNano || 0), s0 + BigInt(p.wall_ns));
  let parent = hex(task.spanId);
  for (let j = i - 1; p.depth > 0 && j >= 0; j--)
    if (phases[j].depth === p.depth - 1) { parent = hex(spans[1 + j].spanId); break; }
  eq(`phase ${i} parent`, hex(s.parentSpanId), parent);
  const pa = attrs(s.attributes);
  for (const k of ["cpu_ns", "execs", "read_bytes", "write_bytes", "peak_mem_bytes"])
    eq(`phase ${i} ${k}`, pa.get("taskprobe.phase." + k), p[k]);
});
const ids = new Set(spans.map((s) => hex(s.spanId)));
if (ids.size !== spans.length) bad.push("span ids not unique");
console.log(`${spans.length} spans, ${figures} figures, ${ev.length} events checked`);
for (const b of bad) console.log(b);
process.exit(bad.length ? 1 : 0);
