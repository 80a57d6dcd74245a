// Injected before </body> of a page the browser test opens (tests/test_workflow.py): once the
// page has rendered, it measures the verdict table where a reader sees it, then clicks each
// distinct report link in turn and records what the report shows. The result goes into the
// body's data-probe attribute, which `chromium --dump-dom` prints.
setTimeout(function () {
  var table = document.querySelector("table.verdicts");
  var out = {width: window.innerWidth, height: window.innerHeight, found: !!table};
  if (!table) { document.body.setAttribute("data-probe", JSON.stringify(out)); return; }
  var heads = Array.from(table.querySelectorAll("th"));
  var row = table.querySelector("tbody tr").getBoundingClientRect();
  out.table_right = table.getBoundingClientRect().right;
  // Visible headers (a narrow screen hides them: each row is a card with its labels).
  out.headers = heads.filter(function (th) { return th.offsetParent !== null; }).map(
    function (th) { var r = th.getBoundingClientRect();
                    return {text: th.textContent.trim(), right: r.right, width: r.width}; });
  out.row_heights = Array.from(table.querySelectorAll("tbody tr")).map(
    function (tr) { return tr.getBoundingClientRect().height; });
  // Widest thing on the page: a reader must never scroll sideways.
  out.scroll_width = document.documentElement.scrollWidth;
  out.first_cell_display = getComputedStyle(table.querySelector("tbody td")).display;
  out.first_row_top = row.top;
  // Pictures wider and taller than an icon drawn above the first row (the rule graph was).
  out.graphics_above = Array.from(document.querySelectorAll("img, svg, canvas")).filter(
    function (g) { var r = g.getBoundingClientRect();
                   return r.width > 50 && r.height > 50 && r.top < row.top; }).length;
  var links = Array.from(table.querySelectorAll("a"));
  out.links = links.map(function (a) {
    return {text: a.textContent.trim(), href: a.getAttribute("href")}; });
  var reportLinks = links.filter(function (a, i) {
    var href = a.getAttribute("href");
    return href.indexOf("javascript:") === 0 &&
      links.findIndex(function (b) { return b.getAttribute("href") === href; }) === i; });
  out.shown = [];
  function next(i) {
    if (i === reportLinks.length) {
      document.body.setAttribute("data-probe", JSON.stringify(out)); return;
    }
    // What a click does: run the link's code (the first click replaces the landing page,
    // so the later anchors are no longer in the document to be clicked).
    new Function(reportLinks[i].getAttribute("href").slice("javascript:".length))();
    setTimeout(function () {
      out.shown.push(document.body.innerText.slice(0, 400));
      next(i + 1);
    }, 500);
  }
  next(0);
}, 2000);
