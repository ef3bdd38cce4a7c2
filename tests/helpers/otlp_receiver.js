#!/usr/bin/env node
// SPDX-License-Identifier: GPL-2.0
// A stand-in OpenTelemetry collector's OTLP/HTTP receiver, on loopback only:
//   node otlp_receiver.js PORT DIR [CODE,CODE,...] [CERT.pem KEY.pem]
// With a certificate and key (made by the test), it answers over https.
// Takes POST /v1/traces and /v1/metrics with JSON bodies. Each request is kept as
// DIR/NNN-traces.json (or -metrics.json), its headers as DIR/NNN.headers.json, and
// answered with the next CODE of the list (then 200), so that a test can make the
// collector fail as it wants. Listening is said by writing DIR/ready. Ends on SIGTERM.
"use strict";
const fs = require("fs");
const http = require("http");
const https = require("https");
const path = require("path");

const [port, dir, codes = "", cert, key] = process.argv.slice(2);
const answers = codes.split(",").filter(Boolean).map(Number);
let n = 0;

const handler = (req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const kind = { "/v1/traces": "traces", "/v1/metrics": "metrics" }[req.url];
    const code = answers.length ? answers.shift() : 200;
    const seq = String(++n).padStart(3, "0");
    fs.writeFileSync(path.join(dir, `${seq}-${kind || "unknown"}.json`), Buffer.concat(chunks));
    fs.writeFileSync(path.join(dir, `${seq}.headers.json`),
      JSON.stringify({ method: req.method, url: req.url, code, headers: req.headers }));
    res.writeHead(kind ? code : 404, { "Content-Type": "application/json" });
    res.end(code === 200 ? "{}" : JSON.stringify({ code, message: `answered ${code} by the test` }));
  });
};
const server = cert
  ? https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, handler)
  : http.createServer(handler);
server.listen(Number(port), "127.0.0.1", () => fs.writeFileSync(path.join(dir, "ready"), ""));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
