// On a phone (panel.css, max-width 640px) a table's rows are stacked cards: each cell
// shows its column's name from data-label, copied here from the table's header once.
// Without JavaScript the cards are the same, without the names.
document.querySelectorAll("table.list").forEach(function (table) {
  var names = Array.prototype.map.call(table.querySelectorAll("thead th"), function (th) {
    return th.textContent.trim();
  });
  table.querySelectorAll("tbody tr").forEach(function (row) {
    Array.prototype.forEach.call(row.cells, function (cell) {
      if (cell.colSpan === 1 && names[cell.cellIndex]) {
        cell.setAttribute("data-label", names[cell.cellIndex]);
      }
    });
  });
});
