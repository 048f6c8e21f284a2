// The inspector page's behaviour (handoff_fsm/render/inspector.py builds the page).
// Rule kept here: this script only displays. Every state, transition, reply and action
// it shows was computed in Python by replaying the trace through the library and is read
// from the page's JSON; nothing here interprets the trace or the chart. It makes no
// request: everything it needs is in the page.
"use strict";
(() => {
  const data = JSON.parse(document.getElementById("handoff-inspector-data").textContent);
  const $ = (id) => document.getElementById(id);
  const slider = $("slider");
  const picker = $("coordinator");
  const details = $("details");
  const lifecyclePane = $("lifecycle-pane");
  const chartPane = $("chart-pane");
  const SVG_NS = "http://www.w3.org/2000/svg";

  // The charts' parts, by state id and by transition index (once per chart).
  const charts = [...document.querySelectorAll("#chart-pane .chart")].map((box) => {
    const states = new Map();
    const transitions = new Map();
    for (const element of box.querySelectorAll("[data-state]")) {
      const id = element.dataset.state;
      if (!states.has(id)) states.set(id, []);
      states.get(id).push(element);
    }
    for (const element of box.querySelectorAll("[data-transition]")) {
      const index = Number(element.dataset.transition);
      if (!transitions.has(index)) transitions.set(index, []);
      transitions.get(index).push(element);
    }
    return { box, states, transitions, marked: [] };
  });

  let shown = data.shown;
  let current = 0;
  let messages = new Map(); // step number -> the lifecycle's elements of that step
  let band = null;
  let lifecycleOf = -1; // whose lifecycle the pane holds

  const coordinator = () => data.coordinators[shown];
  const chartOf = (c) => charts[c.chart];
  const stepAt = (n) => (n === 0 ? null : coordinator().steps[n - 1]);
  const activeAt = (n) => (n === 0 ? coordinator().initial : coordinator().steps[n - 1].state);

  function element(tag, attributes = {}, ...children) {
    const made = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) made.setAttribute(name, value);
    for (const child of children) {
      made.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return made;
  }

  function list(items, empty) {
    if (items.length === 0) return element("span", { class: "none" }, empty);
    return element("ul", {}, ...items.map((item) => element("li", {}, item)));
  }

  // ---------------------------------------------------------------- the chart

  function markChart(n) {
    const c = coordinator();
    const chart = chartOf(c);
    const info = data.charts[c.chart];
    for (const each of charts) {
      for (const marked of each.marked) {
        marked.classList.remove("active", "active-ancestor", "taken", "rejecting");
      }
      each.marked = [];
    }
    const mark = (elements, name) => {
      for (const found of elements || []) {
        found.classList.add(name);
        chart.marked.push(found);
      }
    };
    const active = activeAt(n);
    const held = new Set();
    for (const leaf of active) {
      mark(chart.states.get(leaf), "active");
      for (let up = info.parents[leaf]; up; up = info.parents[up]) held.add(up);
    }
    for (const id of held) mark(chart.states.get(id), "active-ancestor");
    const step = stepAt(n);
    if (step) {
      for (const index of step.taken) mark(chart.transitions.get(index), "taken");
      if (step.rejecting) mark(chart.states.get(step.rejecting), "rejecting");
    }
  }

  function chartInView(n) {
    const c = coordinator();
    const chart = chartOf(c);
    const step = stepAt(n);
    const focus = [...activeAt(n).flatMap((leaf) => chart.states.get(leaf) || [])];
    if (step) for (const index of step.taken) focus.push(...(chart.transitions.get(index) || []));
    keepInView(chartPane, focus);
  }

  function keepInView(pane, elements) {
    if (elements.length === 0) return;
    const view = pane.getBoundingClientRect();
    const boxes = elements.map((e) => e.getBoundingClientRect());
    const top = Math.min(...boxes.map((b) => b.top));
    const bottom = Math.max(...boxes.map((b) => b.bottom));
    if (top >= view.top && bottom <= view.bottom) return;
    const middle = (top + bottom) / 2 - view.top + pane.scrollTop;
    pane.scrollTop = Math.max(0, middle - pane.clientHeight / 2);
  }

  // ---------------------------------------------------------------- the lifecycle

  function showLifecycle() {
    lifecycleOf = shown;
    const template = document.querySelector(`template[data-lifecycle="${shown}"]`);
    lifecyclePane.replaceChildren(template.content.cloneNode(true));
    messages = new Map();
    for (const found of lifecyclePane.querySelectorAll("[data-step]")) {
      const n = Number(found.dataset.step);
      if (!messages.has(n)) messages.set(n, []);
      messages.get(n).push(found);
    }
    const graph = lifecyclePane.querySelector("svg > g");
    band = document.createElementNS(SVG_NS, "rect");
    band.setAttribute("class", "step-band");
    band.setAttribute("rx", "3");
    band.setAttribute("visibility", "hidden");
    // Above the drawing's white ground, below everything drawn on it.
    const ground = graph ? graph.querySelector(":scope > polygon") : null;
    if (graph) graph.insertBefore(band, ground ? ground.nextSibling : graph.firstChild);
    lifecyclePane.scrollTop = 0;
  }

  function markLifecycle(n) {
    for (const found of lifecyclePane.querySelectorAll(".message.current")) {
      found.classList.remove("current");
    }
    const elements = messages.get(n) || [];
    if (!band || elements.length === 0) {
      if (band) band.setAttribute("visibility", "hidden");
      return;
    }
    for (const found of elements) found.classList.add("current");
    const boxes = elements.map((e) => e.getBBox());
    const graph = band.parentNode.getBBox();
    const top = Math.min(...boxes.map((b) => b.y)) - 4;
    const bottom = Math.max(...boxes.map((b) => b.y + b.height)) + 4;
    band.setAttribute("x", String(graph.x));
    band.setAttribute("width", String(graph.width));
    band.setAttribute("y", String(top));
    band.setAttribute("height", String(bottom - top));
    band.setAttribute("visibility", "visible");
    keepInView(lifecyclePane, [band]);
  }

  // ---------------------------------------------------------------- the step's details

  function showDetails(n) {
    const c = coordinator();
    const step = stepAt(n);
    const rows = [];
    const row = (name, ...value) => rows.push(element("dt", {}, name), element("dd", {}, ...value));
    let heading;
    if (step === null) {
      heading = element(
        "h2",
        {},
        `Step 0 of ${c.steps.length}`,
        element("span", { class: "where" }, ` · created by line ${c.newLine}, before any input`),
      );
      row("Input", element("span", { class: "none" }, "none yet"), element("code", { class: "line" }, c.newText));
      if (c.newTime !== null) row("Time", c.newTime);
      row("Reply", element("span", { class: "none" }, "the coordinator was created"));
      row("State", c.initial.join(", "));
      row("Outstanding", element("span", { class: "none" }, "none"));
      row("Completion", element("span", { class: "badge" }, "not complete"));
    } else {
      heading = element(
        "h2",
        {},
        `Step ${n} of ${c.steps.length}`,
        element("span", { class: "where" }, ` · line ${step.line} of the trace`),
      );
      row(
        "Input",
        element("span", { class: "sender" }, `${step.sender} → Coordinator: `),
        step.input,
        element("code", { class: "line" }, step.text),
      );
      if (step.time !== null) row("Time", step.time);
      const reply = [];
      if (step.error) {
        reply.push(element("span", { class: "error" }, `✗ ${step.error.code}: ${step.error.message}`));
      } else if (step.actions.length === 0) {
        reply.push(element("span", { class: "none" }, step.changed ? "no actions" : "no actions, nothing changed"));
      } else {
        reply.push(list(step.actions, ""));
      }
      reply.push(element("code", { class: "line" }, step.reply));
      row("Reply", ...reply);
      row("State", step.state.join(", "), step.changed ? "" : element("span", { class: "none" }, " (unchanged)"));
      if (step.taken.length > 0) {
        const words = step.taken.map((index) => data.charts[c.chart].transitions[index]);
        row("Transitions", element("span", { class: "taken-list" }, list(words, "")));
      }
      row("Outstanding", list(step.outstanding, "none"));
      const completion = step.completion || "not complete";
      row("Completion", element("span", { class: `badge ${step.completion || ""}`.trim() }, completion));
    }
    details.replaceChildren(heading, element("dl", {}, ...rows));
  }

  // ---------------------------------------------------------------- stepping

  // The marks on the chart change at once (activeStates() and .active agree after every
  // step(n)); what needs the layout (scrolling, the lifecycle's band), the details and
  // the address follow once per frame, so stepping through many lines costs one layout.
  let pending = null;

  function show(n) {
    current = n;
    slider.value = String(n);
    markChart(n);
    if (pending === null) pending = requestAnimationFrame(render);
  }

  function render() {
    pending = null;
    if (lifecycleOf !== shown) showLifecycle();
    $("position").textContent = `step ${current} of ${coordinator().steps.length}`;
    showDetails(current);
    markLifecycle(current);
    chartInView(current);
    writeHash();
  }

  function select(index) {
    shown = index;
    const c = coordinator();
    picker.value = String(index);
    charts.forEach((chart, i) => {
      chart.box.hidden = i !== c.chart;
    });
    slider.max = String(c.steps.length);
    $("summary").textContent = c.subtitle;
  }

  function writeHash() {
    const params = new URLSearchParams();
    params.set("step", String(current));
    if (shown !== data.shown) params.set("coordinator", coordinator().key);
    const hash = `#${params}`;
    if (location.hash !== hash) {
      try {
        history.replaceState(null, "", hash);
      } catch (_) {
        // A page that may not rewrite its address still steps; only the hash stays behind.
      }
    }
  }

  function readHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    const key = params.get("coordinator");
    const index = key === null ? data.shown : data.coordinators.findIndex((c) => c.key === key);
    if (index >= 0 && index !== shown) select(index);
    const n = Number.parseInt(params.get("step") || "0", 10);
    const steps = coordinator().steps.length;
    show(Number.isInteger(n) ? Math.min(Math.max(n, 0), steps) : 0);
  }

  const go = (n) => show(Math.min(Math.max(n, 0), coordinator().steps.length));

  // ---------------------------------------------------------------- wiring

  data.coordinators.forEach((c, i) => picker.append(element("option", { value: String(i) }, c.key)));
  $("picker").hidden = data.coordinators.length < 2;
  picker.addEventListener("change", () => {
    select(Number(picker.value));
    show(0);
  });
  slider.addEventListener("input", () => go(Number(slider.value)));
  $("first").addEventListener("click", () => go(0));
  $("prev").addEventListener("click", () => go(current - 1));
  $("next").addEventListener("click", () => go(current + 1));
  $("last").addEventListener("click", () => go(coordinator().steps.length));
  lifecyclePane.addEventListener("click", (event) => {
    const found = event.target.closest("[data-step]");
    if (found) go(Number(found.dataset.step));
  });
  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (target === slider || target === picker || event.altKey || event.ctrlKey || event.metaKey) {
      return; // the slider and the selector take their own keys
    }
    const moves = {
      ArrowLeft: () => current - 1,
      ArrowRight: () => current + 1,
      Home: () => 0,
      End: () => coordinator().steps.length,
    };
    if (event.key in moves) {
      event.preventDefault();
      go(moves[event.key]());
    }
  });
  window.addEventListener("hashchange", readHash);

  window.handoffInspector = Object.freeze({
    /** The lines of the shown coordinator after the one that created it. */
    get steps() {
      return coordinator().steps.length;
    },
    /** Show the state after the coordinator's first n lines (0: as created). */
    step(n) {
      if (!Number.isInteger(n) || n < 0 || n > coordinator().steps.length) {
        throw new RangeError(`step(n) takes 0..${coordinator().steps.length}, not ${n}`);
      }
      show(n);
      return n;
    },
    /** The atomic states active at the shown step, as HandoffCoordinator.state lists them. */
    activeStates() {
      return [...activeAt(current)];
    },
    /** The shown step. */
    get current() {
      return current;
    },
    /** Resolves once the shown step is drawn: details, lifecycle, scrolling, address. */
    drawn() {
      return new Promise((resolve) => {
        if (pending === null) resolve(current);
        else requestAnimationFrame(() => resolve(current));
      });
    },
    /** Every coordinator's key, in the order the trace creates them. */
    coordinators: Object.freeze(data.coordinators.map((c) => c.key)),
    /** The key of the shown coordinator. */
    get coordinator() {
      return coordinator().key;
    },
    /** Show the coordinator ``key`` at step 0. */
    select(key) {
      const index = data.coordinators.findIndex((c) => c.key === key);
      if (index < 0) throw new RangeError(`no coordinator ${JSON.stringify(key)} on this page`);
      select(index);
      show(0);
      return key;
    },
  });

  select(shown);
  readHash();
})();
