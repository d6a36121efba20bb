// The workpool dashboard's script: it polls `state` (JSON, from launcher/dashboard/state.ts) about twice a second
// and draws the page. Charts are plain SVG written here, not a charting library: the page needs two simple chart
// kinds (a line of tasks per second, and the task stream's stacked columns), a library would be the largest
// file of the package and one more dependency to keep, and the page must fetch nothing from the network.
// Nothing here queues: a tab that is slow (or in the background) just asks less often.

const POLL_MS = 400;
const COLUMNS = 120;

/** Timeline columns by rank: Map(column index -> [busyMs, waitMs, tasks, sampledMs]). */
const history = new Map();
let nextBin = 0;
let lastTail = 0;
let updates = 0;
let last;

const $ = (id) => document.getElementById(id);
const esc = (s) =>
  String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const fmt = (x) => Math.round(x).toLocaleString("en-US");
const pct = (x) => `${Math.round(x * 100)}%`;

function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 2 ** 20) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 2 ** 30) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  return `${(n / 2 ** 30).toFixed(2)} GiB`;
}

function duration(ms) {
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.floor(s % 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

async function poll() {
  try {
    const res = await fetch(`state?bins=${nextBin}&tail=${lastTail}`, { cache: "no-store" });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const s = await res.json();
    merge(s);
    draw(s);
    last = s;
    updates++;
    document.body.dataset.updates = String(updates);
    $("updated").textContent = `last update ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    // The launcher exited (after the job), or is busy: keep what is shown, and say so.
    $("updated").textContent = `the launcher does not answer (${e.message}); the last state stays shown`;
    if (last?.job.ended) return;
  }
  setTimeout(poll, POLL_MS);
}

function merge(s) {
  for (const r of s.ranks) {
    let h = history.get(r.rank);
    if (!h) history.set(r.rank, (h = new Map()));
    r.bins.forEach((b, i) => {
      if (b) h.set(s.binsFrom + i, b);
    });
    for (const k of h.keys()) if (k <= s.binsTo - COLUMNS) h.delete(k);
  }
  // The current column is still filling: ask for it again next time.
  nextBin = s.binsTo;
  const tail = $("tail");
  const stick = tail.scrollTop + tail.clientHeight >= tail.scrollHeight - 4;
  for (const l of s.tail) {
    if (l.seq <= lastTail) continue;
    const line = document.createElement("span");
    if (l.err) line.className = "err";
    const rank = document.createElement("span");
    rank.className = "rank";
    rank.textContent = `[${l.rank}] `;
    line.append(rank, `${l.text}\n`);
    tail.append(line);
    lastTail = l.seq;
  }
  while (tail.childNodes.length > 200) tail.firstChild.remove();
  if (stick) tail.scrollTop = tail.scrollHeight;
}

function draw(s) {
  const job = s.job;
  $("app").textContent = job.app.split("/").slice(-2).join("/");
  $("wall").textContent = duration(job.wallMs);
  $("ranks-count").textContent = String(job.np);
  const status = $("status");
  const failed = job.ended ? job.status !== 0 : s.failures.length > 0;
  status.textContent = job.ended ? (job.status === 0 ? "ended" : `failed (status ${job.status})`) : "running";
  status.className = `pill ${job.ended ? (failed ? "failed" : "ok") : failed ? "failed" : "running"}`;
  $("trace").title = job.trace
    ? "the ranks' busy and waiting fractions, and the events of every pool run that has ended (--trace)"
    : "the ranks' busy and waiting fractions so far (launch with --trace for every task span too)";
  document.title = `workpool: ${job.app.split("/").pop()} (${status.textContent})`;
  drawPools(s);
  drawRate(s);
  drawStream(s);
  drawRanks(s);
  drawProblems(s);
}

function drawPools(s) {
  const box = $("pools");
  if (s.pools.length === 0) return;
  box.replaceChildren(
    ...s.pools.map((p) => {
      const el = document.createElement("div");
      el.className = "pool";
      el.id = `pool-${p.pool}`;
      const phaseClass = p.phase.startsWith("working") ? "working" : p.phase.startsWith("detecting") ? "detecting" : "";
      const known = p.loopTotal !== null && p.loopTotal > 0;
      const fraction = known ? Math.min(1, p.loopDone / p.loopTotal) : 0;
      el.innerHTML =
        `<span class="phase ${phaseClass}" title="termination phase">${esc(p.phase)}</span>` +
        `<div><span class="name">${esc(p.pool)}</span> ${esc(p.mode)}, run ${p.run}</div>` +
        `<div class="strategy">${esc(p.strategy)}</div>` +
        (known
          ? `<div class="progress" data-done="${p.loopDone}" data-total="${p.loopTotal}"><div class="bar"><div class="fill"></div></div>` +
            `<span class="label">${pct(fraction)}: ${fmt(p.loopDone)} of ${fmt(p.loopTotal)} items</span></div>`
          : `<div class="progress unknown"><span class="label">total not known (tasks that put tasks): ` +
            `${fmt(p.done)} done, ${fmt(p.queued)} queued</span></div>`) +
        `<div class="figures">` +
        `<span>tasks done <b class="done">${fmt(p.done)}</b></span>` +
        `<span>rate <b class="rate">${fmt(p.rate)}</b> tasks/s</span>` +
        (p.loopRate !== null ? `<span><b>${fmt(p.loopRate)}</b> items/s</span>` : "") +
        `<span>queued <b>${fmt(p.queued)}</b></span>` +
        `<span>moved <b>${fmt(p.movedIn)}</b></span>` +
        `<span>ranks in run <b>${p.activeRanks}</b></span>` +
        `<span>deaths survived <b class="deaths">${p.deaths}</b></span>` +
        `<span>tasks re-dealt <b class="redealt">${fmt(p.redealt)}</b></span>` +
        `</div>`;
      const fill = el.querySelector(".fill");
      if (fill) fill.style.width = `${(fraction * 100).toFixed(1)}%`;
      return el;
    }),
  );
}

/** Round tick steps: 1, 2, 5 times a power of ten. */
function niceStep(max, ticks) {
  const raw = max / ticks;
  const p = 10 ** Math.floor(Math.log10(raw || 1));
  return [1, 2, 5, 10].map((m) => m * p).find((x) => x >= raw) ?? raw;
}

function timeAxis(x0, width, y, binMs) {
  const seconds = (COLUMNS * binMs) / 1000;
  let out = `<line class="axis" x1="${x0}" y1="${y}" x2="${x0 + width}" y2="${y}"/>`;
  for (let t = 0; t <= seconds; t += 10) {
    const x = x0 + width - (t / seconds) * width;
    out += `<line class="axis" x1="${x}" y1="${y}" x2="${x}" y2="${y + 4}"/>`;
    out += `<text x="${x}" y="${y + 15}" text-anchor="middle">${t === 0 ? "now" : `−${t} s`}</text>`;
  }
  return out;
}

function drawRate(s) {
  const W = 1000;
  const H = 150;
  const left = 56;
  const right = 10;
  const top = 8;
  const plotH = H - top - 26;
  const plotW = W - left - right;
  const perBin = new Array(COLUMNS).fill(0);
  for (const h of history.values()) {
    for (const [k, b] of h) {
      const i = k - (s.binsTo - COLUMNS + 1);
      if (i >= 0 && i < COLUMNS) perBin[i] += b[2];
    }
  }
  const rates = perBin.map((t) => (t * 1000) / s.binMs);
  const max = Math.max(1, ...rates);
  const step = niceStep(max, 4);
  const top1 = Math.ceil(max / step) * step;
  let svg = `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="tasks per second, all ranks, over the last minute">`;
  for (let v = 0; v <= top1 + 1e-9; v += step) {
    const y = top + plotH - (v / top1) * plotH;
    svg += `<line class="grid" x1="${left}" y1="${y}" x2="${W - right}" y2="${y}"/>`;
    svg += `<text x="${left - 6}" y="${y + 4}" text-anchor="end">${fmt(v)}</text>`;
  }
  svg += `<text x="12" y="${top + plotH / 2}" transform="rotate(-90 12 ${top + plotH / 2})" text-anchor="middle">tasks/s</text>`;
  const pts = rates
    .map(
      (r, i) => `${(left + ((i + 0.5) / COLUMNS) * plotW).toFixed(1)},${(top + plotH - (r / top1) * plotH).toFixed(1)}`,
    )
    .join(" ");
  svg += `<polyline points="${pts}" fill="none" stroke="#2f6fde" stroke-width="2"/>`;
  svg += timeAxis(left, plotW, top + plotH, s.binMs);
  svg += `</svg>`;
  $("rate-chart").innerHTML = svg;
}

function drawStream(s) {
  const W = 1000;
  const left = 110;
  const right = 10;
  const rowH = s.ranks.length > 32 ? 8 : 16;
  const gap = 2;
  const plotW = W - left - right;
  const colW = plotW / COLUMNS;
  const hosts = groupByHost(s.ranks);
  const multi = hosts.size > 1;
  let y = 4;
  let body = "";
  for (const [host, ranks] of hosts) {
    if (multi) {
      body += `<g class="host"><text x="4" y="${y + 11}">host ${esc(host)}</text></g>`;
      y += 16;
    }
    for (const r of ranks) {
      const h = history.get(r.rank) ?? new Map();
      const dead = r.state === "dead" || r.state === "failed";
      const label = dead ? `rank ${r.rank} ${r.state}` : `rank ${r.rank}`;
      body += `<text x="${left - 8}" y="${y + rowH / 2 + 4}" text-anchor="end" class="${dead ? "dead" : ""}" data-rank="${r.rank}">${esc(label)}</text>`;
      body += `<rect x="${left}" y="${y}" width="${plotW}" height="${rowH}" fill="#f3f5f8"/>`;
      for (let i = 0; i < COLUMNS; i++) {
        const b = h.get(s.binsTo - COLUMNS + 1 + i);
        if (!b || b[3] <= 0) continue;
        const x = left + i * colW;
        const busy = Math.min(1, b[0] / b[3]);
        const wait = Math.min(1 - busy, b[1] / b[3]);
        const hb = busy * rowH;
        const hw = wait * rowH;
        const tip = `rank ${r.rank}: ${pct(busy)} busy, ${pct(wait)} waiting, ${fmt(b[2])} tasks`;
        body += `<g><title>${tip}</title>`;
        body += `<rect x="${x.toFixed(1)}" y="${y}" width="${(colW + 0.3).toFixed(1)}" height="${rowH}" fill="#d9dde3"/>`;
        if (hw > 0.2)
          body += `<rect x="${x.toFixed(1)}" y="${(y + rowH - hb - hw).toFixed(1)}" width="${(colW + 0.3).toFixed(1)}" height="${hw.toFixed(1)}" fill="#e8a33d"/>`;
        if (hb > 0.2)
          body += `<rect x="${x.toFixed(1)}" y="${(y + rowH - hb).toFixed(1)}" width="${(colW + 0.3).toFixed(1)}" height="${hb.toFixed(1)}" fill="#2e9d57"/>`;
        body += `</g>`;
      }
      if (dead)
        body += `<rect x="${left}" y="${y}" width="${plotW}" height="${rowH}" fill="none" stroke="#c0392b" stroke-width="1.5"/>`;
      y += rowH + gap;
    }
  }
  const H = y + 24;
  const svg =
    `<svg viewBox="0 0 ${W} ${H}" role="img" aria-label="task stream: each rank's busy, waiting and outside time">` +
    body +
    timeAxis(left, plotW, y + 2, s.binMs) +
    `</svg>`;
  $("stream").innerHTML = svg;
}

function groupByHost(ranks) {
  const hosts = new Map();
  for (const r of ranks) {
    if (!hosts.has(r.host)) hosts.set(r.host, []);
    hosts.get(r.host).push(r);
  }
  return hosts;
}

function drawRanks(s) {
  const tbody = $("ranks").tBodies[0];
  const hosts = groupByHost(s.ranks);
  const rows = [];
  for (const [host, ranks] of hosts) {
    if (hosts.size > 1) {
      const tr = document.createElement("tr");
      tr.className = "host";
      const busy = ranks.reduce((a, r) => a + r.busy, 0) / ranks.length;
      tr.innerHTML = `<td colspan="13">host ${esc(host)}: ${ranks.length} ranks, ${pct(busy)} busy on average</td>`;
      rows.push(tr);
    }
    for (const r of ranks) {
      const tr = document.createElement("tr");
      tr.id = `rank-${r.rank}`;
      tr.dataset.state = r.state;
      const title = r.exit ? ` title="${esc(r.exit)}"` : "";
      tr.innerHTML =
        `<td>${r.rank}</td>` +
        `<td><span class="state ${esc(r.state)}"${title}>${esc(r.state)}</span></td>` +
        `<td class="num busy">${r.sampled ? pct(r.busy) : "–"}<span class="minibar"><span></span></span></td>` +
        `<td class="num waiting">${r.sampled ? pct(r.waiting) : "–"}</td>` +
        `<td class="num">${fmt(r.queued)}</td>` +
        `<td class="num">${fmt(r.done)}</td>` +
        `<td class="num">${fmt(r.put)}</td>` +
        `<td class="num">${fmt(r.movedIn)}</td>` +
        `<td class="num">${fmt(r.movedOut)}</td>` +
        `<td class="num">${fmt(r.msgs)}</td>` +
        `<td class="num">${bytes(r.bytes)}</td>` +
        `<td class="num">${r.rss ? bytes(r.rss) : "–"}</td>` +
        `<td class="num">${r.heap ? bytes(r.heap) : "–"}</td>`;
      tr.querySelector(".minibar span").style.width = `${Math.round(r.busy * 100)}%`;
      rows.push(tr);
    }
  }
  tbody.replaceChildren(...rows);
}

function drawProblems(s) {
  const items = [
    ...s.deaths.map((d) => ({
      at: d.at,
      cls: "death",
      text: `rank ${d.rank} died (${d.why}); the job went on without it`,
    })),
    ...s.failures.map((f) => ({ at: f.at, cls: "failure", text: f.text })),
  ].sort((a, b) => a.at - b.at);
  const list = $("problems");
  if (items.length === 0) return;
  list.replaceChildren(
    ...items.map((p) => {
      const li = document.createElement("li");
      li.className = p.cls;
      const t = document.createElement("time");
      t.textContent = `+${duration(p.at - s.job.startedAt)}`;
      li.append(t, p.text);
      return li;
    }),
  );
}

poll();
