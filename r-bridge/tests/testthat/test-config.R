test_that("bf_config() prints and returns the Python, bertfeat and torch in use", {
  out <- capture.output(config <- bf_config())
  py <- reticulate::py_config()
  expect_true(config$available)
  expect_identical(normalizePath(config$python), normalizePath(py$python))
  expect_identical(config$bertfeat_version, reticulate::import("bertfeat")$`__version__`)
  expect_match(config$torch_version, "^[0-9]+\\.[0-9]+")
  expect_identical(config$device, "cpu")
  expect_match(paste(out, collapse = "\n"), config$python, fixed = TRUE)
  expect_match(paste(out, collapse = "\n"), paste0("bertfeat:\\s+", config$bertfeat_version))
  if (Sys.info()[["sysname"]] == "Linux") {
    # torch bound to its own BLAS, not R's libblas (which made every product several times slower)
    expect_identical(config$torch_import, "deepbind")
  }
})

test_that("install_bertfeat() installs from the checkout it runs in, a given path, or PyPI", {
  root <- repo_root()
  skip_if(is.null(root), "not run from a bertfeat checkout")
  expect_identical(bertfeat:::bertfeat_source(start = test_path()), normalizePath(root))
  expect_identical(bertfeat:::bertfeat_source(path = root), normalizePath(root))
  expect_identical(bertfeat:::bertfeat_source(start = tempdir()),
                   paste0("bertfeat==", utils::packageVersion("bertfeat"))) # this R package's version
  withr::local_envvar(BERTFEAT_SOURCE = root)
  expect_identical(bertfeat:::bertfeat_source(start = tempdir()), normalizePath(root))
  expect_error(bertfeat:::bertfeat_source(path = tempdir()), class = "bertfeat_error_argument")
})

test_that("install_bertfeat() installs a built wheel or sdist of bertfeat given as path", {
  # a wheel or sdist handed out (a CI artifact, a machine without the repository) was refused as "not a bertfeat
  # source checkout", leaving no way to install it through install_bertfeat()
  dir <- withr::local_tempdir()
  for (name in c("bertfeat-0.1.0-py3-none-any.whl", "bertfeat-0.1.0.tar.gz", "bertfeat-0.2.0.dev1.zip")) {
    file <- file.path(dir, name)
    writeLines("x", file)
    expect_identical(bertfeat:::bertfeat_source(path = file), normalizePath(file))
  }
  for (name in c("other-0.1.0-py3-none-any.whl", "bertfeat.txt")) {
    file <- file.path(dir, name)
    writeLines("x", file)
    err <- expect_error(bertfeat:::bertfeat_source(path = file), class = "bertfeat_error_argument")
    expect_match(conditionMessage(err), "nor a built bertfeat wheel or sdist (bertfeat-*.whl, bertfeat-*.tar.gz)",
                 fixed = TRUE)
  }
  expect_error(bertfeat:::bertfeat_source(path = file.path(dir, "bertfeat-9.9.9.tar.gz")),
               class = "bertfeat_error_argument")
})

test_that("install_bertfeat() checks its arguments before touching anything", {
  expect_error(install_bertfeat(torch_spec = 2), class = "bertfeat_error_argument")
  expect_error(install_bertfeat(envname = ""), class = "bertfeat_error_argument")
  expect_error(install_bertfeat(path = tempdir()), class = "bertfeat_error_argument")
})

test_that("install_bertfeat() refuses a Python older than 3.10 before installing anything", {
  # (found by a versions users bring hunt, 2026-11-26) a python= of 3.9, or a virtualenv reticulate made from an
  # older server's python3, had torch installed (gigabytes), then pip refused bertfeat: "requires a different Python"
  dir <- withr::local_tempdir()
  fake <- file.path(dir, "python3.9")
  calls <- file.path(dir, "calls")
  writeLines(c("#!/bin/sh", sprintf("echo \"$@\" >> '%s'", calls), "echo 3.9"), fake)
  Sys.chmod(fake, "755")
  expect_error(install_bertfeat(envname = file.path(dir, "never"), python = fake),
               "is Python 3.9, and bertfeat needs Python 3.10 or later", class = "bertfeat_error_argument")
  expect_false(dir.exists(file.path(dir, "never")))
  env <- file.path(dir, "old-env")  # an existing virtualenv of Python 3.9
  dir.create(file.path(env, "bin"), recursive = TRUE)
  file.copy(fake, file.path(env, "bin", "python"))
  Sys.chmod(file.path(env, "bin", "python"), "755")
  file.create(file.path(env, "bin", "activate"))
  writeLines("version = 3.9.18", file.path(env, "pyvenv.cfg"))
  unlink(calls)
  expect_error(install_bertfeat(envname = env), "runs Python 3.9 \\(.*virtualenv_remove",
               class = "bertfeat_error_python_unavailable")
  expect_false(any(grepl("pip", readLines(calls))))  # asked its version only: no install was tried
})
