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
  expect_match(out, "set the environment variable RETICULATE_PYTHON", fixed = TRUE)
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
  expect_match(out, paste0(python, " -m pip install --upgrade bertfeat"), fixed = TRUE)
  expect_match(out, "bertfeat::install_bertfeat()", fixed = TRUE)
  expect_no_match(out, "AssertionError")
  expect_match(out, "CONFIG\nR package: bertfeat", fixed = TRUE)
})

test_that("the Python side's functions checked at import are every one this R package calls", {
  called <- character()
  walk <- function(e) {
    if (is.call(e)) {
      if (identical(e[[1]], as.name("$")) && is.call(e[[2]]) && identical(e[[2]][[1]], as.name("python_module"))) {
        called <<- c(called, as.character(e[[3]]))
      }
      if (identical(e[[1]], as.name("$")) && identical(e[[2]], as.name("module"))) {
        called <<- c(called, as.character(e[[3]]))
      }
      for (part in as.list(e)) if (!missing(part)) walk(part)
    }
  }
  ns <- asNamespace("bertfeat")
  for (name in ls(ns, all.names = TRUE)) {
    f <- get(name, envir = ns)
    if (is.function(f)) walk(body(f))
  }
  expect_true(all(c("embed", "read_features", "_import_torch") %in% called))
  expect_setequal(bertfeat:::PYTHON_SIDE, unique(called))
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
