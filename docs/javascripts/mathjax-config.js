// MathJax 3 configuration for pymdownx.arithmatex (generic mode): typeset only the
// .arithmatex spans/divs, AMS equation numbering so that \tag{8.86} shows the thesis number.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
    tags: "ams"
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex"
  },
  svg: { fontCache: "global" }
};
