// What the project's one-file pages share (handoff_fsm/render/htmlpage.py puts it first in
// each page's script): building elements, the marks on a chart drawn by livechart.py, keeping
// marked parts in view, the step controls, the address and drawing once per frame.
// Rule kept here: these only display what a page's JSON holds; none of them interprets a
// trace or a chart, and none makes a request.
"use strict";
const HandoffStepper = (() => {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const MARKS = ["active", "active-ancestor", "taken", "rejecting"];

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

  // ---------------------------------------------------------------- a chart's marks

  /** A chart drawing's parts, by state id and by transition index (read once). */
  function indexChart(box) {
    const states = new Map();
    const transitions = new Map();
    for (const found of box.querySelectorAll("[data-state]")) {
      const id = found.dataset.state;
      if (!states.has(id)) states.set(id, []);
      states.get(id).push(found);
    }
    for (const found of box.querySelectorAll("[data-transition]")) {
      const index = Number(found.dataset.transition);
      if (!transitions.has(index)) transitions.set(index, []);
      transitions.get(index).push(found);
    }
    return { box, states, transitions, marked: [] };
  }

  function clearMarks(chart) {
    for (const marked of chart.marked) marked.classList.remove(...MARKS);
    chart.marked = [];
  }

  function mark(chart, elements, name) {
    for (const found of elements || []) {
      found.classList.add(name);
      chart.marked.push(found);
    }
  }

  /** Mark the active atomic states ``leaves`` and, through ``parents``, what holds them. */
  function markActive(chart, parents, leaves) {
    const held = new Set();
    for (const leaf of leaves) {
      mark(chart, chart.states.get(leaf), "active");
      for (let up = parents[leaf]; up; up = parents[up]) held.add(up);
    }
    for (const id of held) mark(chart, chart.states.get(id), "active-ancestor");
  }

  /** The drawings of the states ``leaves`` (to keep in view). */
  function statesOf(chart, leaves) {
    return leaves.flatMap((leaf) => chart.states.get(leaf) || []);
  }

  /** Scroll ``pane`` so that ``elements`` are in it, centred, unless they already are. */
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

  // ---------------------------------------------------------------- stepping

  /**
   * ``render`` at most once per frame, however often ``request()`` is called: the marks
   * change at once, what needs the layout follows. ``drawn()`` resolves once it has run.
   */
  function everyFrame(render) {
    let pending = null;
    const run = () => {
      pending = null;
      render();
    };
    return {
      request() {
        if (pending === null) pending = requestAnimationFrame(run);
      },
      drawn(value) {
        return new Promise((resolve) => {
          if (pending === null) resolve(value());
          else requestAnimationFrame(() => resolve(value()));
        });
      },
    };
  }

  /**
   * The step controls of a page (#first, #prev, #slider, #next, #last and the keys ← → Home
   * End): each asks ``go(n)`` for a step; ``current()`` and ``last()`` say where it is. Keys
   * typed into the elements of ``exempt`` (the slider, a selector) are theirs.
   */
  function wireSteps({ go, current, last, exempt }) {
    const $ = (id) => document.getElementById(id);
    const slider = $("slider");
    slider.addEventListener("input", () => go(Number(slider.value)));
    $("first").addEventListener("click", () => go(0));
    $("prev").addEventListener("click", () => go(current() - 1));
    $("next").addEventListener("click", () => go(current() + 1));
    $("last").addEventListener("click", () => go(last()));
    document.addEventListener("keydown", (event) => {
      const target = event.target;
      if (target === slider || exempt.includes(target)) return;
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      const moves = {
        ArrowLeft: () => current() - 1,
        ArrowRight: () => current() + 1,
        Home: () => 0,
        End: () => last(),
      };
      if (event.key in moves) {
        event.preventDefault();
        go(moves[event.key]());
      }
    });
  }

  /** A click on an element of ``container`` tagged ``data-step`` goes to that step. */
  function clickSteps(container, go) {
    container.addEventListener("click", (event) => {
      const found = event.target.closest("[data-step]");
      if (found) go(Number(found.dataset.step));
    });
  }

  /** A whole number in 0..last read from the address (anything else: ``fallback``). */
  function stepParam(params, name, last, fallback) {
    const text = params.get(name);
    const n = text === null ? Number.NaN : Number.parseInt(text, 10);
    return Number.isInteger(n) ? Math.min(Math.max(n, 0), last) : fallback;
  }

  /** Write ``params`` into the address without a history entry. */
  function writeHash(params) {
    const hash = `#${params}`;
    if (location.hash === hash) return;
    try {
      history.replaceState(null, "", hash);
    } catch (_) {
      // A page that may not rewrite its address still steps; only the hash stays behind.
    }
  }

  /** A RangeError unless ``n`` is a whole number in 0..last. */
  function checkStep(n, last, what = "step(n)") {
    if (!Number.isInteger(n) || n < 0 || n > last) {
      throw new RangeError(`${what} takes 0..${last}, not ${n}`);
    }
    return n;
  }

  return Object.freeze({
    SVG_NS,
    element,
    list,
    indexChart,
    clearMarks,
    mark,
    markActive,
    statesOf,
    keepInView,
    everyFrame,
    wireSteps,
    clickSteps,
    stepParam,
    writeHash,
    checkStep,
  });
})();
