# The Python BertEmbedder called directly through reticulate, its matrix brought over as nested Python lists:
# a route that shares nothing with bertfeat's byte payload, to check bf_embed() against. `texts` is an R list
# (NULL for a missing value, which reaches Python as None).
python_reference <- function(texts, ...) {
  bertfeat:::python_module() # torch imported the way bf_embed() imports it
  py <- reticulate::import("bertfeat", convert = FALSE)
  X <- py$BertEmbedder(...)$fit_transform(reticulate::r_to_py(texts))
  rows <- reticulate::py_to_r(X$tolist())
  do.call(rbind, lapply(rows, unlist))
}

# A fresh R process (Python binds once per process): its output lines, with `env` as "NAME=value" strings.
run_r <- function(code, env = character()) {
  rscript <- file.path(R.home("bin"), "Rscript")
  suppressWarnings(system2(rscript, c("--vanilla", "-e", shQuote(code)), stdout = TRUE, stderr = TRUE, env = env))
}

repo_root <- function() {
  dir <- normalizePath(testthat::test_path("..", "..", ".."), mustWork = FALSE)
  if (file.exists(file.path(dir, "pyproject.toml"))) dir else NULL
}

# The bundled default model's files linked into the folder `model` (made here): a model folder of the tests' own,
# to move, rename or edit without touching the installed one.
link_default_model <- function(model) {
  src <- reticulate::import("bertfeat.models")$resolve_model("default")$path
  dir.create(model, recursive = TRUE, showWarnings = FALSE)
  for (f in list.files(src)) file.symlink(file.path(src, f), file.path(model, f))
  model
}
