// The langhooks live page. Everything a model or a tool produced is put on the page
// with textContent: it is shown as text, never parsed as HTML.
"use strict";

(() => {
  // Every handler method a record can be named after (chain and streaming events).
  const EVENTS = [
    "on_run_start", "on_llm_new_delta", "on_llm_new_message", "on_llm_ratelimit_info",
    "on_llm_token_usage", "on_llm_response_headers", "on_message_processed",
    "on_message_processing_error", "on_error_message_created", "on_tool_call_identified",
    "on_tool_call_review", "on_tool_execution_started", "on_tool_pre_execution",
    "on_tool_progress", "on_tool_execution_completed", "on_tool_execution_failed",
    "on_tool_execution_exception", "on_tool_interrupted", "on_tool_response_created",
    "on_llm_error", "on_llm_retry", "on_error", "on_retries_exceeded", "on_run_complete",
    "on_llm_call_start", "on_llm_call_complete", "on_partial_response",
    "on_partial_thinking", "on_partial_tool_call", "on_complete_tool_call",
    "on_unmapped_raw_event", "on_complete_response", "message",
  ];

  // What the page counted, for people and tests: every event id received (before
  // duplicates are dropped), and how many were dropped.
  const stats = { received: [], duplicates: 0, opened: 0 };
  window.langhooks = { stats };

  const $ = (id) => document.getElementById(id);
  const make = (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = String(text);
    return node;
  };

  // --- reading records ---------------------------------------------------------

  const partsText = (parts, type) =>
    (parts || [])
      .filter((part) => !type || part.type === type || part.content_type === type)
      .map((part) => (typeof part === "string" ? part : part.content || ""))
      .join("");
  const resultText = (result) => (result ? partsText(result.content) : "");
  const errorText = (error) =>
    error ? `${error.error_type || error.type || "error"}: ${error.message || ""}` : "";
  const json = (value) => JSON.stringify(value === undefined ? {} : value, null, 2);

  // --- the run being shown -----------------------------------------------------

  let view = null;

  function describeState(state) {
    return {
      running: "running", interrupted: "waiting for approval", resuming: "resuming",
      ok: "finished", error: "failed",
      unreadable: "unreadable (recorded by a newer langhooks?)",
    }[state] || state;
  }

  function showRunState(state) {
    const badge = $("run-state");
    badge.textContent = describeState(state);
    badge.className = `badge ${state}`;
  }

  // What the live stream says of the shown run, on its badge and in the run list at
  // once. The list is polled, and the state it gives changes only when the server
  // is done with the run (a run store's save, after its last record): until then
  // the list would say "running" of a run the view shows waiting for approval.
  function setRunState(state) {
    showRunState(state);
    if (!view) return;
    view.state = state;
    for (const button of document.querySelectorAll("#runs button")) {
      if (button.dataset.runId === view.runId) {
        button.querySelector(".state").textContent = describeState(state);
      }
    }
  }

  const busy = (state) => ["running", "resuming"].includes(state);

  function setConnection(text) {
    $("connection").textContent = text;
  }

  class RunView {
    constructor(runId) {
      this.runId = runId;
      this.seen = new Set();
      this.turn = null;
      this.lastTurn = null;
      this.tools = new Map();      // call id -> card
      this.fragments = new Map();  // stream index -> card, for the current turn
      this.usage = { input: 0, output: 0 };
      $("timeline").replaceChildren();
      $("errors").replaceChildren();
      $("usage").textContent = "";
      $("run-id").textContent = runId;
      $("view").hidden = false;
      $("empty").hidden = true;
      this.state = null;  // what the stream said last (setRunState)
      showRunState("running");
      this.open();
    }

    open() {
      const source = new EventSource(`runs/${encodeURIComponent(this.runId)}/events`);
      this.source = source;
      source.onopen = () => {
        stats.opened += 1;
        setConnection("live");
      };
      source.onerror = () => {
        if (source.readyState === EventSource.CLOSED) {
          // The server answered 204: the run ended for good with its last status.
          this.ended();
        } else if (this.lastStatus === "ok" || this.lastStatus === "error") {
          // The server closes the stream after a run's last record: ask once
          // whether more will come rather than show a reconnect.
          source.close();
          this.confirmEnd();
        } else {
          setConnection("reconnecting…");
        }
      };
      for (const name of EVENTS) {
        source.addEventListener(name, (message) => this.receive(name, message));
      }
    }

    close() {
      this.source.close();
      this.closed = true;
    }

    ended() {
      setConnection("stream ended");
      if (this.lastStatus) setRunState(this.lastStatus);
      refreshRuns();
      // The run's state is saved just after its last record: look again.
      setTimeout(refreshRuns, 300);
    }

    confirmEnd() {
      const controller = new AbortController();
      const headers = this.lastId ? { "Last-Event-ID": this.lastId } : {};
      const url = `runs/${encodeURIComponent(this.runId)}/events`;
      fetch(url, { headers, signal: controller.signal, cache: "no-store" })
        .then((response) => {
          controller.abort();
          if (this.closed) return;
          if (response.status === 204) this.ended();
          else this.open();
        })
        .catch(() => {
          if (!this.closed) this.open();
        });
    }

    receive(name, message) {
      stats.received.push(message.lastEventId);
      if (this.seen.has(message.lastEventId)) {
        stats.duplicates += 1;
        return;
      }
      this.seen.add(message.lastEventId);
      this.lastId = message.lastEventId;
      const record = JSON.parse(message.data);
      const handler = this[name];
      if (typeof handler === "function") handler.call(this, record.payload || {}, record);
    }

    // --- model output ---

    currentTurn() {
      if (this.turn === null) {
        const node = make("div", "bubble turn");
        const thinking = make("div", "thinking");
        const text = make("div", "text");
        const usage = make("div", "usage");
        node.append(thinking, text, usage);
        $("timeline").append(node);
        this.turn = { node, thinking, text, usage };
        this.lastTurn = this.turn;
        this.fragments = new Map();
      }
      return this.turn;
    }

    on_llm_new_delta(payload) {
      for (const delta of payload.deltas || []) {
        if (delta.thinking) this.currentTurn().thinking.textContent += delta.thinking;
        if (delta.text) this.currentTurn().text.textContent += delta.text;
        if (delta.tool_call) this.fragment(delta.tool_call);
      }
    }

    on_llm_new_message(payload) {
      const turn = this.currentTurn();
      turn.text.textContent += partsText(payload.message && payload.message.content, "text");
    }

    on_message_processed(payload) {
      if (payload.message && payload.message.role === "assistant") this.turn = null;
    }

    on_llm_token_usage(payload) {
      const usage = payload.usage || {};
      this.usage.input += usage.input_tokens || 0;
      this.usage.output += usage.output_tokens || 0;
      $("usage").textContent =
        `tokens: ${this.usage.input} in · ${this.usage.output} out`;
      if (this.lastTurn) {
        this.lastTurn.usage.textContent =
          `${usage.input_tokens || 0} in · ${usage.output_tokens || 0} out`;
      }
    }

    on_llm_error(payload) {
      this.turn = null;
      $("errors").append(make("div", "error transient", `model call failed: ${errorText(payload.error)}`));
    }

    on_error(payload) {
      $("errors").append(make("div", "error", `run failed: ${errorText(payload.error)}`));
      this.lastStatus = "error";
      setRunState("error");
    }

    on_run_start() {
      // A run (or a resume) begins: the list may say so again.
      if (this.state !== null) setRunState("running");
    }

    on_run_complete(payload) {
      // "ok" may be a resume's tools finishing before the model answers: the run
      // is finished when its stream ends.
      this.lastStatus = payload.result && payload.result.status;
      if (this.lastStatus === "interrupted") setRunState("interrupted");
      setTimeout(refreshRuns, 250);
    }

    // --- tool calls ---

    card(call) {
      let card = call.call_id ? this.tools.get(call.call_id) : undefined;
      if (!card && call.index !== undefined) card = this.fragments.get(call.index);
      if (!card) {
        const node = make("div", "tool");
        const head = make("div", "head");
        const name = make("span", "name", call.name || "tool");
        const state = make("span", "badge", "identified");
        head.append(name, state);
        const args = make("pre", "arguments");
        const actions = make("div", "actions");
        const note = make("div", "note");
        const result = make("pre", "result");
        result.hidden = true;
        node.append(head, args, actions, note, result);
        $("timeline").append(node);
        card = { node, name, state, args, actions, note, result, streamed: "" };
        if (call.index !== undefined) this.fragments.set(call.index, card);
      }
      if (call.call_id) {
        card.node.dataset.callId = call.call_id;
        this.tools.set(call.call_id, card);
      }
      if (call.name) card.name.textContent = call.name;
      if (call.arguments && Object.keys(call.arguments).length) {
        card.args.textContent = json(call.arguments);
      }
      return card;
    }

    setToolState(card, state, label) {
      card.state.textContent = label || state;
      card.state.className = `badge ${state}`;
      card.node.dataset.state = state;
    }

    fragment(partial) {
      const card = this.card({ call_id: partial.id, index: partial.index, name: partial.name });
      card.streamed += partial.partial_arguments || "";
      card.args.textContent = card.streamed;
    }

    on_tool_call_identified(payload) {
      this.setToolState(this.card(payload.call), "identified");
    }

    on_tool_call_review(payload) {
      const card = this.card(payload.call);
      const decision = payload.review && payload.review.human_decision;
      if (decision) {
        card.actions.replaceChildren();
        this.setToolState(card, "approved", decision === "edit" ? "edited" : "approved");
      }
    }

    on_tool_interrupted(payload) {
      for (const result of payload.results || []) {
        const card = this.card({ call_id: result.tool_call_id, name: result.name });
        this.setToolState(card, "awaiting", "awaiting approval");
        card.note.textContent = result.display_text || resultText(result);
        this.offerDecision(card, result.tool_call_id);
      }
    }

    offerDecision(card, callId) {
      const approve = make("button", "approve", "Approve");
      const reject = make("button", "secondary reject", "Reject");
      approve.type = reject.type = "button";
      approve.onclick = () => this.decide(card, callId, "approve", [approve, reject]);
      reject.onclick = () => this.decide(card, callId, "reject", [approve, reject]);
      card.actions.replaceChildren(approve, reject);
    }

    async decide(card, callId, decision, buttons) {
      for (const button of buttons) button.disabled = true;
      card.note.textContent = `sending “${decision}”…`;
      let answer;
      try {
        answer = await fetch(`runs/${encodeURIComponent(this.runId)}/decisions`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ decisions: [{ tool_call_id: callId, decision }] }),
        });
      } catch (error) {
        card.note.textContent = `could not send the decision: ${error}`;
        for (const button of buttons) button.disabled = false;
        return;
      }
      if (answer.ok) {
        card.note.textContent = `${decision === "approve" ? "approved" : "rejected"}; resuming…`;
        setRunState("resuming");
        return;
      }
      const body = await answer.json().catch(() => ({}));
      card.note.textContent = `not accepted (${answer.status}): ${body.error || answer.statusText}`;
      if (answer.status !== 409) for (const button of buttons) button.disabled = false;
    }

    on_tool_execution_started(payload) {
      this.setToolState(this.card(payload.call), "running");
    }

    on_tool_progress(payload) {
      const card = this.card(payload.call);
      const { progress, total, message } = payload.progress || {};
      let text = String(progress);
      if (total !== null && total !== undefined) {
        text += `/${total}`;
        if (total) text += ` (${Math.round((100 * progress) / total)}%)`;
      }
      card.note.textContent = message ? `${text} ${message}` : text;
    }

    on_tool_execution_completed(payload) {
      const card = this.card(payload.call);
      card.actions.replaceChildren();
      card.note.textContent = "";
      this.setToolState(card, "completed");
      card.result.hidden = false;
      card.result.textContent = resultText(payload.result);
    }

    on_tool_execution_failed(payload) {
      const card = this.card(payload.call);
      const result = payload.result || {};
      card.actions.replaceChildren();
      card.note.textContent = "";
      this.setToolState(card, result.is_error ? "failed" : "denied");
      card.result.hidden = false;
      card.result.textContent = resultText(result);
    }
  }

  // --- the list of runs ----------------------------------------------------------

  async function refreshRuns() {
    let body;
    try {
      const answer = await fetch("runs", { headers: { Accept: "application/json" } });
      body = await answer.json();
    } catch (error) {
      return;
    }
    $("start").hidden = !body.agent;
    $("no-runs").hidden = body.runs.length > 0;
    const items = body.runs.map((run) => {
      const item = make("li");
      const button = make("button");
      button.type = "button";
      button.dataset.runId = run.run_id;
      let state = run.state;
      if (view && view.runId === run.run_id) {
        button.className = "selected";
        $("question").hidden = !run.prompt;
        $("question").textContent = run.prompt;
        if (busy(run.state) && view.state !== null && !busy(view.state)) {
          state = view.state;  // the stream is ahead of the list (setRunState)
        } else if (!busy(run.state) && view.lastStatus) {
          setRunState(run.state);
        }
      }
      // A run another process started has no prompt here: name it by its id.
      const title = run.prompt || `run ${run.run_id.slice(0, 8)}`;
      button.append(make("span", "prompt", title), make("span", "state", describeState(state)));
      button.onclick = () => { location.hash = run.run_id; };
      item.append(button);
      return item;
    });
    $("runs").replaceChildren(...items);
  }

  function show() {
    const runId = decodeURIComponent(location.hash.slice(1));
    if (view) view.close();
    view = runId ? new RunView(runId) : null;
    $("question").hidden = true;
    if (!view) {
      $("view").hidden = true;
      $("empty").hidden = false;
    }
    refreshRuns();
  }

  $("start").addEventListener("submit", async (event) => {
    event.preventDefault();
    const field = $("prompt");
    const prompt = field.value.trim() || field.placeholder;
    const button = $("start-button");
    button.disabled = true;
    try {
      const answer = await fetch("runs", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ prompt }),
      });
      const body = await answer.json();
      if (answer.ok) {
        location.hash = body.run_id;
      } else {
        $("errors").append(make("div", "error", `could not start a run: ${body.error}`));
      }
    } finally {
      button.disabled = false;
    }
  });

  window.addEventListener("hashchange", show);
  setInterval(refreshRuns, 2000);
  show();
})();
