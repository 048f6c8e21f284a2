// The diff page's behaviour (handoff_fsm/render/diffpage.py builds the page; the parts every
// page shares are stepper.js's HandoffStepper, put before this).
// Rule kept here: this script only displays. Every reply, state and mark it shows, and
// which step's replies differ, was computed in Python from the diff's report (each side
// replayed by its own code) and is read from the page's JSON; nothing here compares
// replies or interprets a chart. It makes no request: everything it needs is in the page.
"use strict";
(() => {
  const { element } = HandoffStepper;
  const data = JSON.parse(document.getElementById("handoff-diff-data").textContent);
  const $ = (id) => document.getElementById(id);
  const SIDES = ["a", "b"];
  const slider = $("slider");
  const picker = $("difference");
  const stepsList = $("steps");

  const charts = {};
  for (const side of SIDES) {
    const box = document.querySelector(`#chart-${side} .chart`);
    charts[side] = box ? HandoffStepper.indexChart(box) : null;
  }

  let shown = 0;
  let current = 0;
  let listed = -1; // whose steps the list holds

  const difference = () => data.differences[shown] || null;
  const last = () => (difference() ? difference().steps.length - 1 : 0);
  const stepAt = (n) => difference().steps[n];
  const activeAt = (side, n) => (difference() ? stepAt(n)[side].state || [] : []);

  function checkSide(side) {
    if (!SIDES.includes(side)) throw new RangeError(`a side is "a" or "b", not ${JSON.stringify(side)}`);
    return side;
  }

  // ---------------------------------------------------------------- the charts

  function markCharts(n) {
    for (const side of SIDES) {
      const chart = charts[side];
      if (!chart) continue;
      HandoffStepper.clearMarks(chart);
      HandoffStepper.markActive(chart, data[side].parents, activeAt(side, n));
    }
  }

  function chartsInView(n) {
    for (const side of SIDES) {
      const chart = charts[side];
      if (chart) HandoffStepper.keepInView($(`chart-${side}`), HandoffStepper.statesOf(chart, activeAt(side, n)));
    }
  }

  // ---------------------------------------------------------------- the words

  function reply(side, step) {
    const answer = step[side];
    const words = answer.error
      ? element("span", { class: "error" }, `✗ ${answer.words}`)
      : element("span", { class: "words" }, answer.words);
    const state = answer.state === null ? element("span", { class: "none" }, "not known") : answer.state.join(", ");
    const completion = answer.complete
      ? element("span", { class: `badge ${answer.completion || ""}`.trim() }, `complete (${answer.completion})`)
      : element("span", { class: "badge" }, answer.completion ? `not complete (${answer.completion})` : "not complete");
    return [words, element("div", { class: "state" }, "state: ", state, " · ", completion)];
  }

  function showAnswers(n) {
    const d = difference();
    for (const side of SIDES) {
      const box = $(`answer-${side}`);
      if (!d) {
        box.replaceChildren(element("span", { class: "none" }, "no difference to step through"));
        continue;
      }
      const step = stepAt(n);
      const heading = element(
        "div",
        { class: "heading" },
        n === 0 ? "As created" : `Reply to step ${n}`,
        step.differs ? element("span", { class: "flag" }, "≠ the replies differ here") : "",
      );
      box.classList.toggle("differs", step.differs);
      box.replaceChildren(heading, ...reply(side, step), element("code", { class: "line" }, step[side].reply));
    }
  }

  function listSteps() {
    listed = shown;
    const d = difference();
    if (!d) {
      stepsList.replaceChildren();
      return;
    }
    const items = d.steps.map((step, n) => {
      const replies = step.differs
        ? [
            element("div", { class: "side-reply" }, element("span", { class: "tag" }, "A"), step.a.words),
            element("div", { class: "side-reply" }, element("span", { class: "tag" }, "B"), step.b.words),
          ]
        : [element("div", { class: "side-reply same" }, `both: ${step.a.words}`)];
      const item = element(
        "li",
        { "data-step": String(n), class: step.differs ? "differs" : "" },
        element("span", { class: "n" }, String(n)),
        element("div", { class: "input" }, step.words, ...replies),
      );
      item.title = step.line;
      return item;
    });
    stepsList.replaceChildren(...items);
  }

  function markSteps(n) {
    for (const item of stepsList.children) {
      item.classList.toggle("current", Number(item.dataset.step) === n);
    }
    const item = stepsList.querySelector("li.current");
    if (item) HandoffStepper.keepInView($("steps-pane"), [item]);
  }

  function showAbout() {
    const d = difference();
    $("kind").textContent = d ? `Difference ${shown + 1} of ${data.differences.length}: ${d.kind}` : "";
    $("summary").textContent = d ? d.summary : "";
  }

  // ---------------------------------------------------------------- stepping

  // The marks on the charts change at once (activeStates() and .active agree after every
  // step(n)); the words, the list, scrolling and the address follow once per frame.
  const frame = HandoffStepper.everyFrame(render);

  function go(n) {
    current = Math.min(Math.max(n, 0), last());
    slider.value = String(current);
    markCharts(current);
    frame.request();
  }

  function render() {
    if (listed !== shown) listSteps();
    showAbout();
    const d = difference();
    $("position").textContent = d
      ? `step ${current} of ${last()}${current === d.first ? " · the replies differ" : ""}`
      : "no steps";
    showAnswers(current);
    markSteps(current);
    chartsInView(current);
    writeHash();
  }

  function select(index) {
    shown = index;
    picker.value = String(index);
    slider.max = String(last());
  }

  function writeHash() {
    if (!difference()) return;
    const params = new URLSearchParams();
    params.set("difference", String(shown + 1));
    params.set("step", String(current));
    HandoffStepper.writeHash(params);
  }

  function readHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    const count = data.differences.length;
    const number = HandoffStepper.stepParam(params, "difference", count, 0);
    if (number >= 1 && number - 1 !== shown) select(number - 1);
    const d = difference();
    go(HandoffStepper.stepParam(params, "step", last(), d ? d.first : 0));
  }

  // ---------------------------------------------------------------- wiring

  data.differences.forEach((d, i) => picker.append(element("option", { value: String(i) }, `${i + 1}. ${d.kind}`)));
  $("picker").hidden = data.differences.length < 2;
  picker.addEventListener("change", () => {
    select(Number(picker.value));
    go(difference().first);
  });
  HandoffStepper.wireSteps({ go, current: () => current, last, exempt: [picker] });
  HandoffStepper.clickSteps(stepsList, go);
  window.addEventListener("hashchange", readHash);

  window.handoffDiff = Object.freeze({
    /** How many differences the page holds. */
    differences: data.differences.length,
    /** Show difference i (from 0) at its first differing step. */
    show(i) {
      HandoffStepper.checkStep(i, data.differences.length - 1, "show(i)");
      select(i);
      go(difference().first);
      return i;
    },
    /** The shown difference (from 0). */
    get shown() {
      return shown;
    },
    /** The inputs of the shown difference's trace after its new line. */
    get steps() {
      return last();
    },
    /** Show both sides after the first n inputs (0: as created). */
    step(n) {
      go(HandoffStepper.checkStep(n, last()));
      return n;
    },
    /** The shown step. */
    get current() {
      return current;
    },
    /** The first step of the shown difference whose replies differ. */
    get firstDifference() {
      return difference() ? difference().first : 0;
    },
    /** Side "a" or "b": its atomic states active at the shown step, as its coordinator lists them. */
    activeStates(side) {
      return [...activeAt(checkSide(side), current)];
    },
    /** Resolves once the shown step is drawn: words, list, scrolling, address. */
    drawn() {
      return frame.drawn(() => current);
    },
  });

  select(0);
  readHash();
})();
