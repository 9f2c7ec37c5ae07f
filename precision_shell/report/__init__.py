"""The self-contained HTML report of one compare: plot points, the SVG accuracy plot, the page."""
