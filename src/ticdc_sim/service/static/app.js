// The playground: a fresh cluster and changefeed per run, the script posted to it, and the
// changefeed's records tailed live (Server-Sent Events read with fetch, so a bearer token
// can go along) into one column per partition. TSOs (448999999999836208) and BIGINT values
// are past what a JavaScript Number holds exactly: the service's JSON is read with them as
// BigInt, and shown digit for digit.
"use strict";

const $ = (id) => document.getElementById(id);
let tail = null; // the AbortController of the running tail
let current = null; // the cluster of the last run, removed when the next one starts
let shown = 0;
let skipped = 0; // records the changefeed no longer kept when the tail reached them

// JSON.parse hands a reviver each number's source text where the browser can (context.source,
// with JSON.rawJSON to write it back); elsewhere long integers are quoted before parsing
const SOURCE_TEXT = typeof JSON.rawJSON === "function";
const LONG_INTEGER = /("(?:[^"\\]|\\.)*")|(?<![\d.])-?\d{16,}(?![\d.eE])/g;

function parseExact(text) {
  if (!SOURCE_TEXT) return JSON.parse(text.replace(LONG_INTEGER, (m, str) => str || `"${m}"`));
  return JSON.parse(text, (key, value, context) =>
    typeof value === "number" && !Number.isSafeInteger(value) && /^-?\d+$/.test(context.source)
      ? BigInt(context.source)
      : value);
}

function showJSON(value) {
  return JSON.stringify(value, (key, v) =>
    typeof v === "bigint" ? JSON.rawJSON(v.toString()) : v);
}

function headers(extra) {
  const token = $("token").value.trim();
  return Object.assign(token ? { Authorization: `Bearer ${token}` } : {}, extra || {});
}

async function call(method, path, body, type) {
  const init = { method, headers: headers(type ? { "Content-Type": type } : {}) };
  if (body !== undefined) init.body = body;
  const response = await fetch(path, init);
  const text = await response.text();
  const data = text ? parseExact(text) : {};
  if (!response.ok) throw new Error(data.error_msg || `${response.status} ${response.statusText}`);
  return data;
}

function setStatus(text, failed) {
  $("status").textContent = text;
  $("status").className = failed ? "failed" : "";
}

function column(partition) {
  let found = document.querySelector(`[data-partition="${partition}"] ol`);
  if (!found) {
    const section = document.createElement("section");
    section.className = "partition";
    section.dataset.partition = partition;
    section.innerHTML = `<h2>partition ${partition}</h2><ol></ol>`;
    const view = $("partitions-view");
    const after = [...view.children].find((c) => Number(c.dataset.partition) > partition);
    view.insertBefore(section, after || null);
    found = section.querySelector("ol");
  }
  return found;
}

function text(b64) {
  if (b64 === null) return "null";
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  return new TextDecoder("utf-8", { fatal: false }).decode(bytes);
}

function summary(event) {
  if (event.type === "checkpoint") return `checkpoint ${event.ts}`;
  if (event.type === "ddl") return `DDL ${event.query}`;
  if (event.type === "bootstrap") return `BOOTSTRAP ${event.schema}.${event.table} at version ${event.version}`;
  const image = event.columns || event.pre_columns || {};
  return `${event.type.toUpperCase()} ${event.schema}.${event.table} ${showJSON(image)}`;
}

function show(message) {
  const item = document.createElement("li");
  const events = message.decoded || [];
  item.className = events.map((e) => e.type).join(" ");
  const offset = document.createElement("span");
  offset.className = "offset";
  offset.textContent = `#${message.offset}`;
  item.appendChild(offset);
  for (const event of events) {
    const line = document.createElement("div");
    line.className = "event";
    line.textContent = summary(event);
    item.appendChild(line);
  }
  const raw = document.createElement("pre");
  raw.className = "raw";
  raw.textContent = `key: ${text(message.key)}\nvalue: ${text(message.value)}`;
  item.appendChild(raw);
  column(message.partition).appendChild(item);
  shown += 1;
  counted();
}

function counted() {
  const gone = skipped ? `, ${skipped} skipped (no longer kept)` : "";
  $("count").textContent = `${shown} records${gone}`;
}

async function follow(cluster, changefeed, controller) {
  const path = `/sim/v1/clusters/${cluster}/changefeeds/${changefeed}/tail?from_start=true`;
  const response = await fetch(path, { headers: headers(), signal: controller.signal });
  if (!response.ok) throw new Error(`tail: ${response.status}`);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const lines = block.split("\n");
      if (lines.includes("event: end")) return; // the changefeed went
      const data = lines.filter((l) => l.startsWith("data: "));
      if (!data.length) continue;
      const body = parseExact(data.map((l) => l.slice(6)).join("\n"));
      if (lines.includes("event: gap")) { // the tail fell behind what the changefeed keeps
        skipped += Number(body.skipped);
        counted();
      } else {
        show(body);
      }
    }
  }
}

function statements(result) {
  const list = $("statements");
  list.innerHTML = "";
  for (const s of result.statements) {
    const item = document.createElement("li");
    if (s.error) {
      item.className = "failed";
      item.textContent = `line ${s.error.line}:${s.error.column} ERROR ${s.error.code}: ${s.error.message}`;
    } else if (s.columns) {
      item.textContent = `${s.statement} -> ${s.rows.length} rows`;
    } else {
      const rows = s.affected_rows === 1 ? "1 row" : `${s.affected_rows} rows`;
      item.textContent = `${s.statement} -> ${rows} affected` +
        (s.commit_ts ? `, committed at ${s.commit_ts}` : "");
    }
    list.appendChild(item);
  }
}

async function run() {
  if (tail) tail.abort();
  setStatus("starting ..."); // the last run's status is gone at once, not after an await
  $("partitions-view").innerHTML = "";
  $("statements").innerHTML = "";
  shown = 0;
  skipped = 0;
  $("count").textContent = "";
  $("run").disabled = true;
  try {
    if (current) {
      const previous = current;
      current = null;
      await call("DELETE", `/sim/v1/clusters/${previous}`).catch(() => {});
    }
    setStatus("creating a cluster and a changefeed ...");
    const cluster = (await call("POST", "/sim/v1/clusters", JSON.stringify({}), "application/json")).id;
    current = cluster;
    const protocol = $("protocol").value;
    const partitions = Math.max(1, Math.min(16, Number($("partitions").value) || 1));
    let uri = `memory://?protocol=${protocol}&partition-num=${partitions}`;
    if ($("extension").checked && protocol === "canal-json") uri += "&enable-tidb-extension=true";
    const config = { sink: { dispatchers: [{ matcher: ["*.*"], partition: $("dispatcher").value }] } };
    await call("POST", "/api/v2/changefeeds", JSON.stringify({
      namespace: cluster, changefeed_id: "playground", sink_uri: uri, replica_config: config,
    }), "application/json");
    for (let p = 0; p < partitions; p++) column(p);
    tail = new AbortController();
    const following = follow(cluster, "playground", tail).catch((e) => {
      if (e.name !== "AbortError") setStatus(e.message, true);
    });
    setStatus("running ...");
    const result = await call("POST", `/sim/v1/clusters/${cluster}/sql`, $("sql").value, "text/plain");
    statements(result);
    const sent = result.messages.playground || 0;
    setStatus(result.ok ? `done: ${sent} records sent` : `stopped at an error; ${sent} records sent`, !result.ok);
    void following;
  } catch (e) {
    setStatus(e.message, true);
  } finally {
    $("run").disabled = false;
  }
}

$("run").addEventListener("click", run);
$("raw").addEventListener("change", () => {
  document.body.classList.toggle("raw-shown", $("raw").checked);
});
