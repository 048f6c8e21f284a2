// The inspector page's behaviour (handoff_fsm/render/inspector.py builds the page; the
// parts every page shares are stepper.js's HandoffStepper, put before this).
// Rule kept here: this script only displays. Every state, transition, reply and action
// it shows was computed in Python by replaying the trace through the library and is read
// from the page's JSON; nothing here interprets the trace or the chart. It makes no
// request: everything it needs is in the page.
"use strict";
(() => {
  const { SVG_NS, element, list, mark, keepInView } = HandoffStepper;
  const data = JSON.parse(document.getElementById("handoff-inspector-data").textContent);
  const $ = (id) => document.getElementById(id);
  const slider = $("slider");
  const picker = $("coordinator");
  const details = $("details");
  const lifecyclePane = $("lifecycle-pane");
  const chartPane = $("chart-pane");

  const charts = [...document.querySelectorAll("#chart-pane .chart")].map(HandoffStepper.indexChart);

  let shown = data.shown;
  let current = 0;
  let messages = new Map(); // step number -> the lifecycle's elements of that step
  let band = null;
  let lifecycleOf = -1; // whose lifecycle the pane holds

  const coordinator = () => data.coordinators[shown];
  const chartOf = (c) => charts[c.chart];
  const stepAt = (n) => (n === 0 ? null : coordinator().steps[n - 1]);
  const activeAt = (n) => (n === 0 ? coordinator().initial : coordinator().steps[n - 1].state);

  // ---------------------------------------------------------------- the chart

  function markChart(n) {
    const c = coordinator();
    const chart = chartOf(c);
    for (const each of charts) HandoffStepper.clearMarks(each);
    HandoffStepper.markActive(chart, data.charts[c.chart].parents, activeAt(n));
    const step = stepAt(n);
    if (step) {
      for (const index of step.taken) mark(chart, chart.transitions.get(index), "taken");
      if (step.rejecting) mark(chart, chart.states.get(step.rejecting), "rejecting");
    }
  }

  function chartInView(n) {
    const c = coordinator();
    const chart = chartOf(c);
    const step = stepAt(n);
    const focus = HandoffStepper.statesOf(chart, activeAt(n));
    if (step) for (const index of step.taken) focus.push(...(chart.transitions.get(index) || []));
    keepInView(chartPane, focus);
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
  const frame = HandoffStepper.everyFrame(render);

  function show(n) {
    current = n;
    slider.value = String(n);
    markChart(n);
    frame.request();
  }

  function render() {
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
    HandoffStepper.writeHash(params);
  }

  function readHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    const key = params.get("coordinator");
    const index = key === null ? data.shown : data.coordinators.findIndex((c) => c.key === key);
    if (index >= 0 && index !== shown) select(index);
    show(HandoffStepper.stepParam(params, "step", coordinator().steps.length, 0));
  }

  const go = (n) => show(Math.min(Math.max(n, 0), coordinator().steps.length));

  // ---------------------------------------------------------------- wiring

  data.coordinators.forEach((c, i) => picker.append(element("option", { value: String(i) }, c.key)));
  $("picker").hidden = data.coordinators.length < 2;
  picker.addEventListener("change", () => {
    select(Number(picker.value));
    show(0);
  });
  HandoffStepper.wireSteps({
    go,
    current: () => current,
    last: () => coordinator().steps.length,
    exempt: [picker], // the slider and the selector take their own keys
  });
  HandoffStepper.clickSteps(lifecyclePane, go);
  window.addEventListener("hashchange", readHash);

  window.handoffInspector = Object.freeze({
    /** The lines of the shown coordinator after the one that created it. */
    get steps() {
      return coordinator().steps.length;
    },
    /** Show the state after the coordinator's first n lines (0: as created). */
    step(n) {
      show(HandoffStepper.checkStep(n, coordinator().steps.length));
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
      return frame.drawn(() => current);
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
