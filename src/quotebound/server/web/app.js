// quotebound web page. Every piece of text from the server goes into the page through
// textContent or createTextNode, never as HTML, so a source holding <script> renders as text.
"use strict";

const $ = (id) => document.getElementById(id);
const KEY = "quotebound.key";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(typeof child === "string" || typeof child === "number" ? String(child) : child);
  }
  return node;
}

function key() { return sessionStorage.getItem(KEY) || ""; }

async function api(path, options) {
  const opts = Object.assign({ headers: {} }, options || {});
  opts.headers = Object.assign({ Authorization: "Bearer " + key() }, opts.headers);
  const response = await fetch(path, opts);
  if (!response.ok) {
    let message = response.status + " " + response.statusText;
    try {
      const body = await response.json();
      if (body && body.error) message = body.error.message;
    } catch (_) { /* not JSON */ }
    throw new Error(message);
  }
  return response;
}

// -- key -------------------------------------------------------------------------------

async function useKey(value) {
  if (value !== undefined) sessionStorage.setItem(KEY, value.trim());
  const who = $("who");
  if (!key()) { who.textContent = "No key: create one with `quotebound keys create`."; return; }
  try {
    const me = await (await api("/v1/whoami")).json();
    const groups = me.groups.length ? me.groups.join(", ") : "public documents only";
    who.textContent = "Key " + me.id + (me.name ? " (" + me.name + ")" : "") + " · reads: " + groups;
    who.className = "ok";
  } catch (err) {
    who.textContent = err.message;
    who.className = "bad";
  }
}

// -- asking ----------------------------------------------------------------------------

const STAGES = {
  searching: () => "Searching the documents you may read…",
  retrieved: (d) => d.packed
    ? "Found " + d.packed + " passage(s) in " + d.documents.length + " document(s). Asking the model…"
    : "No document you may read matched.",
  generating: (d) => "The model is writing (attempt " + d.attempt + "). Nothing is shown until it is verified.",
  verified: (d) => "Checked attempt " + d.attempt + ": " + d.kept + " of " + d.claims + " claim(s) verified.",
  repairing: (d) => "Asking the model to repair " + d.failures + " failed citation(s)…",
};

async function askQuestion(question) {
  const answer = $("answer");
  const progress = $("progress");
  answer.replaceChildren();
  progress.textContent = "Sending…";
  $("ask-button").disabled = true;
  const claims = el("div", { class: "claims" });
  answer.append(claims);
  try {
    const response = await api("/v1/ask", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ question: question, stream: true }),
    });
    await readEvents(response, (event, data) => {
      if (event === "progress") {
        const say = STAGES[data.stage];
        progress.textContent = say ? say(data) : data.stage;
      } else if (event === "claim") {
        claims.append(claimView(data, data.cards, data.trace_id));
      } else if (event === "answer") {
        progress.textContent = "";
        renderAnswer(data);
      } else if (event === "error") {
        progress.textContent = "";
        answer.replaceChildren(el("p", { class: "error" }, "Error: " + data.message));
      }
    });
  } catch (err) {
    progress.textContent = "";
    answer.replaceChildren(el("p", { class: "error" }, "Error: " + err.message));
  } finally {
    $("ask-button").disabled = false;
  }
}

async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) onEvent(event, JSON.parse(data.join("\n")));
    }
  }
}

function chip(card, traceId, cite) {
  // The quote behind this claim's citation of the card, else the card's first quote.
  const target = cite && cite.span ? cite : card.quotes[0];
  // an elided quote is several parts, each highlighted
  return el("button", {
    type: "button",
    class: "chip",
    // a claim streamed before its trace is written opens once the answer arrives
    disabled: !traceId,
    title: card.label,
    "aria-label": "Source " + card.number + ": " + card.label,
    "data-card": card.number,
    onclick: () => target
      ? openSource(traceId, target.source, partsOf(target), card.label)
      : null,
  }, String(card.number));
}

function claimView(claim, cards, traceId) {
  const p = el("p", { class: "claim" }, claim.text + " ");
  for (const card of cards) {
    const cite = (claim.cites || []).find((x) => x.card === card.number);
    p.append(chip(card, traceId, cite));
  }
  return p;
}

function renderAnswer(a) {
  const answer = $("answer");
  answer.replaceChildren();
  if (a.claims.length) {
    const claims = el("div", { class: "claims" });
    for (const claim of a.claims) {
      const cards = claim.cards.map((n) => a.cards.find((c) => c.number === n)).filter(Boolean);
      claims.append(claimView(claim, cards, a.trace_id));
    }
    answer.append(claims);
    if (a.unaddressed && a.unaddressed.length) {
      answer.append(el("p", { class: "note unaddressed" }, "Not answered by a verified claim: " +
        a.unaddressed.map((part) => "“" + part + "”").join(", ") + "."));
    }
    for (const c of a.conflicts || []) {
      const dated = c.updated ? ", updated " + c.updated : "";
      answer.append(el("p", { class: "note conflict" }, "Check which applies: " + c.source +
        " (" + c.label + dated + "), not cited, gives other figures than claim " + c.claim +
        ": “" + c.sentence + "”"));
    }
    const dropped = a.counts.dropped_claims || 0;
    if (a.status === "partial" && dropped) {
      answer.append(el("p", { class: "note" },
        dropped + " claim(s) could not be verified against the sources and are not shown."));
    }
    const list = el("ol", { class: "cards" });
    for (const card of a.cards) {
      const item = el("li", { value: card.number },
        el("strong", {}, card.label), card.updated ? " · updated " + card.updated : "");
      for (const q of card.quotes) {
        item.append(el("blockquote", {}, "“" + q.text + "”",
          " ", el("button", { type: "button", class: "link", onclick: () => openSource(a.trace_id, q.source, partsOf(q), card.label) },
            "show in source" + (q.page ? " (p. " + q.page + ")" : ""))));
      }
      list.append(item);
    }
    answer.append(el("h3", {}, "Sources"), list);
  } else if (a.abstention) {
    const ab = a.abstention;
    const box = el("div", { class: "abstention", role: "note" },
      el("h3", {}, a.status === "provider_error" ? "The model could not answer" : "Not answered from the documents"),
      el("p", {}, el("strong", {}, "Asked: "), ab.question),
      el("p", {}, el("strong", {}, "Searched: "), ab.searched.length ? ab.searched.join(", ") : "nothing matched"),
      el("p", {}, el("strong", {}, "Missing: "), ab.missing),
      el("p", {}, el("strong", {}, "Next step: "), ab.next_step));
    answer.append(box);
  }
  answer.append(el("p", { class: "status" },
    "status " + a.status + (a.repaired ? " · repaired once" : "") + " · model " + a.model + " · trace " + a.trace_id));
}

// -- the source panel ------------------------------------------------------------------

// The verified spans of a citation or card quote: each part of an elided quote, else its span.
function partsOf(q) {
  return q.spans && q.spans.length ? q.spans : (q.span ? [q.span] : []);
}

async function openSource(traceId, sid, parts, label) {
  const panel = $("panel");
  const text = $("panel-text");
  panel.hidden = false;
  document.body.classList.add("panel-open");
  clearPages();
  $("panel-title").textContent = label || sid;
  $("panel-meta").textContent = "Loading " + sid + "…";
  text.replaceChildren();
  try {
    const view = await (await api("/v1/traces/" + encodeURIComponent(traceId) + "/sources/" + encodeURIComponent(sid))).json();
    const src = view.source;
    $("panel-title").textContent = src.title || label || src.key || sid;
    const meta = [sid + " as sent"];
    if (src.key) meta.push(src.key);
    if (src.updated) meta.push("updated " + src.updated);
    if (src.page) meta.push("page " + src.page);
    $("panel-meta").textContent = meta.join(" · ");
    const link = $("panel-link");
    if (isWebLink(view.link)) { link.href = view.link; link.hidden = false; } else { link.removeAttribute("href"); link.hidden = true; }
    // Spans count Unicode code points (the server is Python); JavaScript strings count UTF-16
    // units, so slice an array of code points, or emoji would shift every highlight.
    const chars = Array.from(src.text);
    const current = mergeSpans(parts || []);
    const spans = mergeSpans(view.spans.concat(current));
    appendMarked(text, chars, 0, chars.length, spans, current);
    (text.querySelector("mark.current") || text.querySelector("mark") || text).scrollIntoView({ block: "center" });
    showPages(traceId, sid).catch(() => {}); // (its own failures are shown in the panel)
  } catch (err) {
    $("panel-meta").textContent = "Error: " + err.message;
  }
}

// The pages of the source's original PDF that hold its verified quotes, each an image with the
// quote highlighted on the page itself (rendered by the service), above the text as sent. An
// original that is not a PDF, or none kept, shows nothing here; a page that fails says so. A
// later click wins: pages of an earlier one are never added to its panel.
let pagesShown = 0;
const pageUrls = [];

function clearPages() {
  pagesShown += 1;
  while (pageUrls.length) URL.revokeObjectURL(pageUrls.pop());
  $("panel-pages").replaceChildren();
}

async function showPages(traceId, sid) {
  const mine = pagesShown;
  const box = $("panel-pages");
  const base = "/v1/traces/" + encodeURIComponent(traceId) + "/sources/" + encodeURIComponent(sid);
  let marks;
  try {
    marks = await (await api(base + "/highlights")).json();
  } catch (err) {
    // a 404 is no original kept (the text as sent is all there is); anything else is said
    if (mine === pagesShown && !/^404\b|no original|not sent|not a PDF/.test(err.message)) {
      box.append(el("p", { class: "note error" }, "The original could not be shown: " + err.message));
    }
    return;
  }
  if (marks.media_type !== "application/pdf") return showDocument(base, mine, box);
  for (const page of marks.pages) {
    let blob;
    try {
      blob = await (await api(base + "/page.png?page=" + page.page)).blob();
    } catch (err) {
      if (mine === pagesShown) box.append(el("p", { class: "note error" }, "Page " + page.page + " could not be shown: " + err.message));
      continue;
    }
    if (mine !== pagesShown) return; // another citation was opened meanwhile
    const url = URL.createObjectURL(blob);
    pageUrls.push(url);
    const img = el("img", { class: "page", alt: "Page " + page.page + " of the original, the quote highlighted",
      "data-page": String(page.page), "data-boxes": JSON.stringify(page.boxes),
      "data-width": String(page.width), "data-height": String(page.height) });
    img.src = url;
    box.append(el("figure", {}, img, el("figcaption", {}, "Page " + page.page + " of the original")));
  }
  const first = box.querySelector("img");
  if (first) first.addEventListener("load", () => first.scrollIntoView({ block: "start" }), { once: true });
}

// Any other original (HTML, Markdown, text): the whole document at the version sent, rendered
// by the service (escaped, no script, no outside resource) with the quotes marked, in a frame
// sandboxed without scripts, scrolled to the first quote.
async function showDocument(base, mine, box) {
  let page;
  try {
    page = await (await api(base + "/document")).text();
  } catch (err) {
    if (mine === pagesShown) box.append(el("p", { class: "note error" }, "The document could not be shown: " + err.message));
    return;
  }
  if (mine !== pagesShown) return;
  const frame = el("iframe", { class: "document", title: "The whole document, the quote marked", sandbox: "allow-same-origin" });
  frame.addEventListener("load", () => {
    const mark = frame.contentDocument && frame.contentDocument.getElementById("quote");
    if (mark) mark.scrollIntoView({ block: "center" });
  }, { once: true });
  frame.srcdoc = page;
  box.append(el("figure", {}, frame, el("figcaption", {}, "The whole document, the quote marked")));
}

function isWebLink(url) {
  if (!url) return false;
  try { return ["http:", "https:"].includes(new URL(url).protocol); } catch (_) { return false; }
}

// Overlapping or touching [start, end) spans, merged and sorted.
function mergeSpans(spans) {
  const sorted = spans.map((s) => [s[0], s[1]]).sort((x, y) => x[0] - y[0]);
  const out = [];
  for (const s of sorted) {
    const last = out[out.length - 1];
    if (last && s[0] <= last[1]) last[1] = Math.max(last[1], s[1]);
    else out.push(s);
  }
  return out;
}

// chars[from, to) as text, with the parts inside any span marked; the parts inside a span of
// `current` (the citation opened) marked "current", one mark per part.
function appendMarked(container, chars, from, to, spans, current) {
  const cuts = new Set([from, to]);
  for (const [a, b] of spans.concat(current || [])) { cuts.add(Math.max(from, Math.min(a, to))); cuts.add(Math.max(from, Math.min(b, to))); }
  const points = Array.from(cuts).sort((x, y) => x - y);
  const inside = (list, a, b) => list.some(([s, e]) => s <= a && b <= e);
  let run = null; // [from, to, kind] of the piece being built, kind "", "mark" or "current"
  const flush = () => {
    if (!run) return;
    const piece = chars.slice(run[0], run[1]).join("");
    if (!run[2]) container.append(document.createTextNode(piece));
    else container.append(el("mark", run[2] === "current" ? { class: "current" } : {}, piece));
  };
  for (let i = 0; i + 1 < points.length; i++) {
    const a = points[i], b = points[i + 1];
    const kind = inside(current || [], a, b) ? "current" : inside(spans, a, b) ? "mark" : "";
    // a part of the current quote stays one mark; elsewhere marks that touch are one
    const same = run && run[2] === kind && (kind !== "current" || inside(current, run[0], b));
    if (same) run[1] = b;
    else { flush(); run = [a, b, kind]; }
  }
  flush();
}

// -- history ---------------------------------------------------------------------------

async function showHistory() {
  const box = $("history");
  box.replaceChildren(el("p", {}, "Loading…"));
  try {
    const data = await (await api("/v1/traces?limit=50")).json();
    box.replaceChildren();
    if (!data.traces.length) box.append(el("p", {}, "No answers yet."));
    for (const t of data.traces) {
      const item = el("article", { class: "trace", "data-trace": t.id },
        el("h3", {}, t.question),
        el("p", { class: "status" }, t.created_at + " · " + (t.status || "-") + " · " + (t.model || "-") + " · trace " + t.id));
      const titles = Object.fromEntries(t.sources.map((s) => [s.id, s.title || s.key || s.id]));
      for (const c of t.claims) {
        const p = el("p", { class: c.kept ? "claim kept" : "claim dropped" },
          c.kept ? "" : el("span", { class: "badge" }, "dropped: " + (c.reason || "not verified")), c.text, " ");
        for (const cit of c.citations) {
          if (cit.valid && cit.span) {
            p.append(el("button", { type: "button", class: "chip", title: titles[cit.source] || cit.source,
              onclick: () => openSource(t.id, cit.source, partsOf(cit), titles[cit.source]) }, cit.source));
          } else {
            p.append(el("span", { class: "chip invalid", title: cit.reason || "invalid" }, (cit.source || "?") + " ✗"));
          }
        }
        item.append(p);
      }
      if (!t.claims.length) item.append(el("p", { class: "note" }, "No claims: the answer abstained or the model failed."));
      box.append(item);
    }
  } catch (err) {
    box.replaceChildren(el("p", { class: "error" }, "Error: " + err.message));
  }
}

// -- routing ---------------------------------------------------------------------------

function route() {
  const history = location.hash === "#/history";
  $("ask-view").hidden = history;
  $("history-view").hidden = !history;
  $("nav-ask").classList.toggle("active", !history);
  $("nav-history").classList.toggle("active", history);
  if (history) showHistory();
}

document.addEventListener("DOMContentLoaded", () => {
  $("key-form").addEventListener("submit", (e) => { e.preventDefault(); useKey($("key").value); $("key").value = ""; });
  $("ask-form").addEventListener("submit", (e) => { e.preventDefault(); askQuestion($("question").value); });
  $("panel-close").addEventListener("click", () => {
    $("panel").hidden = true;
    document.body.classList.remove("panel-open");
    clearPages();
  });
  window.addEventListener("hashchange", route);
  useKey();
  route();
});
