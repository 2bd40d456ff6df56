/*
 * cuda-course-lab: the course's JupyterLab 4 extension, written as a plain-JS module-federation
 * container so that it installs as files (pip data files) and needs no build step or Node.js.
 *
 * JupyterLab loads this script, calls container.init(shareScope) with its shared modules and then
 * container.get('./extension'); the plugins use JupyterLab's own @jupyterlab/notebook and
 * @codemirror/view from that scope (the same instances the editor uses).
 *
 * What it does (issue 18):
 *  - a code cell whose first line is `%%cuda VAR` is edited as C++ (mime text/x-c++src), with line
 *    numbers and every `______` blank marked;
 *  - right before a cell calling L.check(...) / L.self_check(...) is sent to the kernel, it sends the
 *    notebook's graded cells as they are on screen (comm target `autograder.snapshot`), and for
 *    L.self_check it saves the notebook;
 *  - it answers the kernel's `autograder.frontend` comm: append a hint-usage record to a cell's outputs
 *    (so the saved notebook carries it), save the notebook.
 *  - package.json disables nbgrader's Validate button (a second checker that disagreed with the grader).
 */
(function () {
  'use strict';
  var NAME = 'cuda-course-lab';
  var CUDA_HEAD = /^\s*%%cuda\b/;
  var CHECK_CALL = /\bL\s*\.\s*(check|self_check)\s*\(/;
  var SELF_CHECK_CALL = /\bL\s*\.\s*self_check\s*\(/;
  var CPP_MIME = 'text/x-c++src';
  var shareScope = null;

  function cmpVersion(a, b) {
    var pa = String(a).split(/[.+-]/).map(Number), pb = String(b).split(/[.+-]/).map(Number);
    for (var i = 0; i < Math.max(pa.length, pb.length); i++) {
      var x = pa[i] || 0, y = pb[i] || 0;
      if (isNaN(x) || isNaN(y)) { continue; }
      if (x !== y) { return x - y; }
    }
    return 0;
  }

  function shared(name) {
    var versions = shareScope && shareScope[name];
    if (!versions || !Object.keys(versions).length) {
      return Promise.reject(new Error(NAME + ': shared module ' + name + ' is not available'));
    }
    var best = Object.keys(versions).sort(cmpVersion).pop();
    return Promise.resolve(versions[best].get()).then(function (factory) { return factory(); });
  }

  function injectStyle() {
    if (document.getElementById(NAME + '-style')) { return; }
    var style = document.createElement('style');
    style.id = NAME + '-style';
    style.textContent = [
      '.ag-blank { background: #fff1a8; outline: 1px dashed #bf8700; border-radius: 2px; color: #953800; font-weight: 700; }',
      '.ag-cuda-cell .jp-InputPrompt::after { content: "CUDA"; display: block; font-size: 9px; color: #76b900; font-weight: 700; }',
      '.ag-cuda-cell .cm-gutters { background: #f6f8fa; }'
    ].join('\n');
    document.head.appendChild(style);
  }

  function makePlugins(nbmod, cmView) {
    var blankMark = cmView.Decoration.mark({ class: 'ag-blank', attributes: { title: '这里还没有填空' } });
    var matcher = new cmView.MatchDecorator({ regexp: /_{6,}/g, decoration: function () { return blankMark; } });
    var blankHighlighter = cmView.ViewPlugin.fromClass(
      class {
        constructor(view) { this.decorations = matcher.createDeco(view); }
        update(u) { this.decorations = matcher.updateDeco(u, this.decorations); }
      },
      { decorations: function (v) { return v.decorations; } }
    );

    function source(cell) { return cell.model.sharedModel.getSource(); }

    function styleEditor(cell) {
      var editor = cell.editor;
      if (!editor || cell._agEditorDone) { return; }
      cell._agEditorDone = true;
      try { editor.setOption('lineNumbers', true); } catch (e) { /* older editor API */ }
      if (typeof editor.injectExtension === 'function') { editor.injectExtension(blankHighlighter); }
    }

    function styleCell(panel, cell) {
      if (!cell || !cell.model || cell.model.type !== 'code') { return; }
      var isCuda = CUDA_HEAD.test(source(cell));
      if (isCuda) {
        cell.node.classList.add('ag-cuda-cell');
        if (cell.model.mimeType !== CPP_MIME) { cell.model.mimeType = CPP_MIME; }
        if (!cell._agMimeHook) {
          cell._agMimeHook = true;
          // the notebook resets every code cell's mime type when the kernel's language arrives
          cell.model.mimeTypeChanged.connect(function () {
            if (CUDA_HEAD.test(source(cell)) && cell.model.mimeType !== CPP_MIME) {
              setTimeout(function () { cell.model.mimeType = CPP_MIME; }, 0);
            }
          });
        }
        if (cell.editor) { styleEditor(cell); } else if (cell.ready) { cell.ready.then(function () { styleEditor(cell); }); }
      } else if (cell.node.classList.contains('ag-cuda-cell')) {
        cell.node.classList.remove('ag-cuda-cell');
        cell.model.mimeType = panel.content.codeMimetype;
      }
    }

    function styleAll(panel) {
      panel.content.widgets.forEach(function (cell) { styleCell(panel, cell); });
    }

    function snapshot(panel) {
      var cells = [];
      var model = panel.content.model;
      for (var i = 0; i < model.cells.length; i++) {
        var c = model.cells.get(i);
        var nbg = c.getMetadata ? c.getMetadata('nbgrader') : null;
        cells.push({ index: i, id: c.id, cell_type: c.type, source: c.sharedModel.getSource(),
                     grade_id: nbg && nbg.grade_id ? nbg.grade_id : null });
      }
      return { path: panel.context.path, dirty: panel.context.model.dirty, cells: cells, time: Date.now() / 1000 };
    }

    function kernelOf(panel) {
      var s = panel.sessionContext && panel.sessionContext.session;
      return s ? s.kernel : null;
    }

    function onFrontendComm(panel, comm, msg) {
      var data = (msg && msg.content && msg.content.data) || {};
      if (data.action === 'append_output' && data.cell_id && data.output) {
        var model = panel.content.model;
        for (var i = 0; i < model.cells.length; i++) {
          var c = model.cells.get(i);
          if (c.id === data.cell_id && c.type === 'code') { c.outputs.add(data.output); break; }
        }
      }
      if (data.action === 'save' || data.save) { panel.context.save(); }
    }

    function hookKernel(panel, kernel) {
      if (!kernel || kernel._agHooked) { return; }
      kernel._agHooked = true;
      kernel.registerCommTarget('autograder.frontend', function (comm, msg) { onFrontendComm(panel, comm, msg); });
    }

    function setupPanel(panel) {
      var pending = null;
      var restyle = function () {
        if (pending) { return; }
        pending = setTimeout(function () { pending = null; styleAll(panel); }, 150);
      };
      panel.context.ready.then(function () {
        styleAll(panel);
        panel.content.model.contentChanged.connect(restyle);
        panel.content.model.cells.changed.connect(restyle);
      });
      panel.sessionContext.ready.then(function () { hookKernel(panel, kernelOf(panel)); });
      panel.sessionContext.kernelChanged.connect(function (_, args) { hookKernel(panel, args.newValue); });
    }

    var plugin = {
      id: NAME + ':plugin',
      description: 'CUDA cells, checks on what is on screen, hint records (CUDA course)',
      autoStart: true,
      requires: [nbmod.INotebookTracker],
      activate: function (app, tracker) {
        injectStyle();
        tracker.widgetAdded.connect(function (_, panel) { setupPanel(panel); });
        tracker.forEach(function (panel) { setupPanel(panel); });
        nbmod.NotebookActions.executionScheduled.connect(function (_, args) {
          var cell = args.cell;
          if (!cell || cell.model.type !== 'code') { return; }
          var src = source(cell);
          if (!CHECK_CALL.test(src)) { return; }
          var panel = tracker.find(function (p) { return p.content === args.notebook; });
          var kernel = panel ? kernelOf(panel) : null;
          if (!kernel) { return; }
          var data = snapshot(panel);
          data.cell_id = cell.model.id;
          data.self_check = SELF_CHECK_CALL.test(src);
          data.will_save = data.self_check;
          // sent before the cell's execute request, on the same channel: the kernel has it when the cell runs
          var comm = kernel.createComm('autograder.snapshot');
          comm.open(data);
          comm.close();
          if (data.self_check) { panel.context.save(); }
        });
        window.cudaCourseLab = { version: '0.1.0' };   // for the browser tests
      }
    };
    return [plugin];
  }

  var container = {
    init: function (scope) { shareScope = scope; },
    get: function (module) {
      if (module === './extension') {
        return Promise.all([shared('@jupyterlab/notebook'), shared('@codemirror/view')]).then(function (mods) {
          var plugins = makePlugins(mods[0], mods[1]);
          return function () { return { __esModule: true, default: plugins }; };
        });
      }
      return Promise.reject(new Error('Module "' + module + '" does not exist in container ' + NAME + '.'));
    }
  };
  window._JUPYTERLAB = window._JUPYTERLAB || {};
  window._JUPYTERLAB[NAME] = container;
})();
