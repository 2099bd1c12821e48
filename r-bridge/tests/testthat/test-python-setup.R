# Python binds once per R process, so each case runs in a fresh one.
probe <- 'res <- tryCatch(bertfeat::bf_embed("a cat"), error = function(e) e)
cat("CLASS:", class(res), "\n"); cat(conditionMessage(res), "\n")
cat("CONFIG\n"); bertfeat::bf_config()'

python_without_bertfeat <- function() {
  dir <- file.path(tempdir(), "venv-without-bertfeat")
  if (!file.exists(file.path(dir, "bin", "python"))) {
    base <- reticulate::py_config()$python
    system2(base, c("-m", "venv", "--without-pip", shQuote(dir)), stdout = FALSE, stderr = FALSE)
  }
  file.path(dir, "bin", "python")
}

test_that("a Python without bertfeat gives a classed error naming that Python and the fix", {
  python <- python_without_bertfeat()
  skip_if_not(file.exists(python), "could not create a virtualenv")
  out <- paste(run_r(probe, env = c(paste0("RETICULATE_PYTHON=", python), "PYTHONPATH=")), collapse = "\n")
  expect_match(out, "CLASS: bertfeat_error_python_unavailable bertfeat_error", fixed = TRUE)
  expect_match(out, "The Python side of bertfeat is not available", fixed = TRUE)
  expect_match(out, "No module named 'bertfeat'", fixed = TRUE)
  expect_match(out, paste0("Python in use: ", python), fixed = TRUE)
  expect_match(out, "chosen by RETICULATE_PYTHON", fixed = TRUE)
  expect_match(out, "bertfeat::install_bertfeat()", fixed = TRUE)
  expect_match(out, sprintf(paste("set the environment variable RETICULATE_PYTHON to a Python where",
                                  "`pip install \"bertfeat==%s\"` (this R package's version) has been run."),
                            utils::packageVersion("bertfeat")), fixed = TRUE)
  # bf_config() shows the same diagnosis instead of failing
  expect_match(out, "CONFIG\nR package: bertfeat", fixed = TRUE)
})

# What `probe` prints in the Python without bertfeat with an old bertfeat of `version` first on PYTHONPATH, in
# tempdir()/`dir`: its bertfeat/_r.py of `lines`, or none. Returns that output, the Python and the package's folder.
old_bertfeat <- function(dir, version, lines = NULL) {
  python <- python_without_bertfeat()
  skip_if_not(file.exists(python), "could not create a virtualenv")
  old <- file.path(tempdir(), dir)
  dir.create(file.path(old, "bertfeat"), recursive = TRUE, showWarnings = FALSE)
  writeLines(sprintf('__version__ = "%s"', version), file.path(old, "bertfeat", "__init__.py"))
  if (!is.null(lines)) writeLines(lines, file.path(old, "bertfeat", "_r.py"))
  out <- paste(run_r(probe, env = c(paste0("RETICULATE_PYTHON=", python), paste0("PYTHONPATH=", old))),
               collapse = "\n")
  list(out = out, python = python, package = file.path(old, "bertfeat"))
}

test_that("a bertfeat too old for this R package (no bertfeat._r) is reported the same way", {
  out <- old_bertfeat("old-bertfeat", "0.0.1")$out
  expect_match(out, "CLASS: bertfeat_error_python_unavailable", fixed = TRUE)
  expect_match(out, "No module named 'bertfeat._r'", fixed = TRUE)
})

test_that("a bertfeat older than this R package (a bertfeat._r without what came later) says to update it", {
  # the R package updated, the Python package not: bf_read_features() was "module \"bertfeat._r\" has no
  # attribute \"read_features\"" (bertfeat_error_python), nothing saying which package or what to do
  old <- old_bertfeat("older-bertfeat", "0.0.9",
                      c("def _import_torch():\n    pass",
                        paste0("def ", c("embed", "describe", "config", "r_advice"), "(*args, **kwargs):\n",
                               "    raise AssertionError('called')")))
  out <- old$out
  python <- old$python
  expect_match(out, "CLASS: bertfeat_error_python_unavailable bertfeat_error", fixed = TRUE)
  expect_match(out, sprintf("The bertfeat Python package (0.0.9, in %s) is older than this R package (%s)",
                            old$package, utils::packageVersion("bertfeat")),
               fixed = TRUE)
  expect_match(out, "its bertfeat._r has no column_form_hint, input_found, probe, read_features, run_cli",
               fixed = TRUE)
  expect_match(out, paste0("Python in use: ", python), fixed = TRUE)
  expect_match(out, sprintf("%s -m pip install \"bertfeat==%s\"", python, utils::packageVersion("bertfeat")),
               fixed = TRUE)
  expect_match(out, "bertfeat::install_bertfeat()", fixed = TRUE)
  expect_no_match(out, "AssertionError")
  expect_match(out, "CONFIG\nR package: bertfeat", fixed = TRUE)
})

test_that("a bertfeat whose functions take other arguments than this R package passes is refused at import", {
  # the names were checked, not the arguments: a bertfeat._r.run_cli() without `on_line` (an older bertfeat) failed
  # bf_embed_file() at the call, a BertEmbedder without `prompt_name` failed bf_embed(prompt_name = ...) with
  # Python's "__init__() got an unexpected keyword argument", and an embed() wanting one more argument (a newer
  # bertfeat) failed every bf_embed(), none saying which package or what to do
  python <- python_without_bertfeat()
  skip_if_not(file.exists(python), "could not create a virtualenv")
  other <- file.path(tempdir(), "other-bertfeat")
  dir.create(file.path(other, "bertfeat"), recursive = TRUE, showWarnings = FALSE)
  writeLines(c('__version__ = "0.0.9"',
               "class BertEmbedder:",
               "    def __init__(self, model='default', pooling='cls+mean', layers=None, missing='error',",
               "                 cache_dir=None, max_length=None, long_text='truncate', stride=None, normalize=False,",
               "                 batch_tokens=None, device='auto', dtype='auto', progress=False, layer_agg='mean',",
               "                 trust_remote_code=False, cache_all_layers=False, prefix=None):",
               "        raise AssertionError('called')",
               "def probe(texts, y, **params):",
               "    raise AssertionError('called')"),
             file.path(other, "bertfeat", "__init__.py"))
  writeLines(c("def _import_torch():\n    pass",
               paste0("def ", c("column_form_hint(absent, names)", "config()", "describe(column_names=None, params=None)",
                                "input_found(path)", "probe(texts, missing_mask, y, params=None)", "r_advice(message)",
                                "read_features(path)", "run_cli(args)",
                                "embed(texts, missing_masks, column_names, params, batch)"),
                      ":\n    raise AssertionError('called')")),
             file.path(other, "bertfeat", "_r.py"))
  out <- paste(run_r(probe, env = c(paste0("RETICULATE_PYTHON=", python), paste0("PYTHONPATH=", other))),
               collapse = "\n")
  expect_match(out, "CLASS: bertfeat_error_python_unavailable bertfeat_error", fixed = TRUE)
  expect_match(out, sprintf(paste("The bertfeat Python package (0.0.9, in %s) does not take what this R package",
                                  "(%s) passes it:"), file.path(other, "bertfeat"), utils::packageVersion("bertfeat")),
               fixed = TRUE)
  expect_match(out, "bertfeat._r.embed(): missing a required argument: 'batch'", fixed = TRUE)
  expect_match(out, "bertfeat._r.run_cli() takes no on_line", fixed = TRUE)
  expect_match(out, "bertfeat.BertEmbedder() takes no prompt_name\n", fixed = TRUE) # each it lacks, by name
  expect_no_match(out, "bertfeat.probe()", fixed = TRUE) # its **params takes every name
  expect_no_match(out, "bertfeat._r.describe()", fixed = TRUE)
  expect_match(out, paste0("Python in use: ", python), fixed = TRUE)
  expect_match(out, sprintf("run `bertfeat::install_bertfeat()` to match versions (it installs bertfeat %s)",
                            utils::packageVersion("bertfeat")), fixed = TRUE)
  expect_match(out, sprintf("%s -m pip install \"bertfeat==%s\"", python, utils::packageVersion("bertfeat")),
               fixed = TRUE)
  expect_no_match(out, "AssertionError")
  expect_match(out, "CONFIG\nR package: bertfeat", fixed = TRUE)
})

test_that("the Python side's functions checked at import are every one this R package calls, as it calls them", {
  called <- list()
  walk <- function(e) {
    if (is.call(e)) {
      f <- e[[1]]
      if (is.call(f) && identical(f[[1]], as.name("$")) &&
          ((is.call(f[[2]]) && identical(f[[2]][[1]], as.name("python_module"))) || identical(f[[2]], as.name("module")))) {
        arg_names <- names(as.list(e)[-1]) %||% rep("", length(e) - 1L)
        called[[length(called) + 1L]] <<- list(name = as.character(f[[3]]), n = sum(!nzchar(arg_names)),
                                               named = sort(arg_names[nzchar(arg_names)]))
      }
      for (part in as.list(e)) if (!missing(part)) walk(part)
    }
  }
  ns <- asNamespace("bertfeat")
  for (name in ls(ns, all.names = TRUE)) {
    f <- get(name, envir = ns)
    if (is.function(f)) walk(body(f))
  }
  names <- vapply(called, `[[`, "", "name")
  expect_true(all(c("embed", "read_features", "_import_torch", "run_cli") %in% names))
  expect_setequal(names(bertfeat:::PYTHON_SIDE), unique(names))
  for (call in called) { # each call passes what the check binds: so many by position, these by name
    declared <- bertfeat:::PYTHON_SIDE[[call$name]]
    expect_identical(list(n = call$n, named = call$named),
                     list(n = declared[["n"]] %||% 0L, named = sort(as.character(declared[["named"]]))),
                     label = paste0("the call of bertfeat._r.", call$name))
  }
  # the names put in `params`, for BertEmbedder(**params) and probe(texts, y, **params)
  params_list <- function(f) {
    found <- NULL
    find <- function(e) {
      if (is.call(e) && identical(e[[1]], as.name("<-")) && identical(e[[2]], as.name("params")) &&
          is.call(e[[3]]) && identical(e[[3]][[1]], as.name("list"))) {
        found <<- names(as.list(e[[3]])[-1])
      }
      if (is.call(e)) for (part in as.list(e)) if (!missing(part)) find(part)
    }
    find(body(f))
    found
  }
  params <- bertfeat:::python_params()
  expect_setequal(params$BertEmbedder$named, c(params_list(bertfeat:::embedder_params), bertfeat:::DOTS_PARAMS))
  expect_setequal(params$probe$named, c(params_list(bertfeat::bf_probe), bertfeat:::PROBE_DOTS_PARAMS))
  # and the real Python side takes them all
  module <- bertfeat:::python_module()
  expect_null(unlist(Map(function(name, passes) bertfeat:::refused_arguments(module, name, name, passes),
                         names(bertfeat:::PYTHON_SIDE), bertfeat:::PYTHON_SIDE)))
})

test_that("R CMD check's test runner skips the tests without the Python side, saying so, unless NOT_CRAN=true", {
  # tests/testthat.R, which R CMD check runs (its copy beside testthat/ there, as here in the checkout)
  runner <- normalizePath(testthat::test_path("..", "testthat.R"), mustWork = FALSE)
  skip_if_not(file.exists(runner), "tests/testthat.R is not beside the tests")
  python <- python_without_bertfeat()
  skip_if_not(file.exists(python), "could not create a virtualenv")
  # test_check() outside R CMD check stops on its own error: stubbed, it says that it was called
  code <- sprintf('test_check <- function(...) cat("RAN TESTS\\n")
    exprs <- parse("%s"); for (e in exprs) if (!identical(e, quote(library(testthat)))) eval(e)
    cat("EXIT OK\\n")', runner)
  without <- paste(run_r(code, env = c(paste0("RETICULATE_PYTHON=", python), "PYTHONPATH=", "NOT_CRAN=false")),
                   collapse = "\n")
  expect_no_match(without, "RAN TESTS", fixed = TRUE)
  expect_match(without, "bertfeat's tests were not run: the Python side is not available", fixed = TRUE)
  expect_match(without, "EXIT OK", fixed = TRUE)
  forced <- paste(run_r(code, env = c(paste0("RETICULATE_PYTHON=", python), "PYTHONPATH=", "NOT_CRAN=true")),
                  collapse = "\n")
  expect_match(forced, "RAN TESTS", fixed = TRUE)
  with <- paste(run_r(code, env = c("NOT_CRAN=false")), collapse = "\n")
  expect_match(with, "RAN TESTS", fixed = TRUE)
})

test_that("RETICULATE_PYTHON pointing nowhere gives the same classed error", {
  out <- paste(run_r(probe, env = "RETICULATE_PYTHON=/no/such/python"), collapse = "\n")
  expect_match(out, "CLASS: bertfeat_error_python_unavailable", fixed = TRUE)
  expect_match(out, "/no/such/python", fixed = TRUE)
  expect_match(out, "bertfeat::install_bertfeat()", fixed = TRUE)
})

test_that("loading the package starts no Python and changes no environment variable", {
  out <- run_r('before <- Sys.getenv(); loadNamespace("bertfeat")
cat("PY:", reticulate::py_available(initialize = FALSE), "\n")
cat("ENV:", identical(before, Sys.getenv()), "\n")')
  expect_true(any(grepl("PY: FALSE", out, fixed = TRUE)))
  expect_true(any(grepl("ENV: TRUE", out, fixed = TRUE)))
})
