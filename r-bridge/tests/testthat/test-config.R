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
  expect_identical(bertfeat:::bertfeat_source(start = tempdir()), "bertfeat")
  withr::local_envvar(BERTFEAT_SOURCE = root)
  expect_identical(bertfeat:::bertfeat_source(start = tempdir()), normalizePath(root))
  expect_error(bertfeat:::bertfeat_source(path = tempdir()), class = "bertfeat_error_argument")
})

test_that("install_bertfeat() checks its arguments before touching anything", {
  expect_error(install_bertfeat(torch_spec = 2), class = "bertfeat_error_argument")
  expect_error(install_bertfeat(envname = ""), class = "bertfeat_error_argument")
  expect_error(install_bertfeat(path = tempdir()), class = "bertfeat_error_argument")
})
