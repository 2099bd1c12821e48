#' Install the Python side of bertfeat
#'
#' Creates a Python virtualenv (by default `"r-bertfeat"`, which bertfeat then finds by itself), installs torch
#' into it first, then the bertfeat Python package. Restart R afterwards: a session binds to one Python.
#'
#' torch goes first and separately so that you choose the build: the default `"torch"` is whatever pip picks
#' for this machine, which on Linux is a CUDA build of several gigabytes. For a CPU-only machine pass, for
#' example, `torch_spec = "torch==2.13.0"` and `torch_index_url = "https://download.pytorch.org/whl/cpu"`.
#'
#' @param envname Name (or path) of the virtualenv to create or update.
#' @param path A local bertfeat source checkout (the directory holding `pyproject.toml`), or a built wheel or
#'   sdist of bertfeat (`bertfeat-*.whl`, `bertfeat-*.tar.gz`), to install from. `NULL` uses the environment
#'   variable `BERTFEAT_SOURCE` if set, else the checkout that holds the working directory if there is one, else
#'   bertfeat from PyPI at this R package's version (`"bertfeat==0.1.0"` for bertfeat 0.1.0: the two are
#'   released together, and an R package calls its own version's functions).
#' @param torch_spec The pip requirement for torch, such as `"torch"` or `"torch==2.13.0"`.
#' @param torch_index_url Package index to take torch from (`NULL`: pip's default).
#' @param python The Python interpreter to base the virtualenv on (`NULL`: reticulate's choice). bertfeat needs
#'   Python 3.10 or later: an older one, here or in an existing virtualenv, is refused before anything is installed.
#'
#' @return The path of the virtualenv's Python, invisibly.
#' @seealso [bf_config()] to see which Python is in use.
#' @examples
#' \dontrun{
#' install_bertfeat()
#' # CPU-only torch:
#' install_bertfeat(torch_spec = "torch==2.13.0",
#'                  torch_index_url = "https://download.pytorch.org/whl/cpu")
#' }
#' @export
install_bertfeat <- function(envname = "r-bertfeat", path = NULL, torch_spec = "torch", torch_index_url = NULL,
                             python = NULL) {
  check_string(envname, "envname")
  check_string(torch_spec, "torch_spec")
  check_string(torch_index_url, "torch_index_url", null_ok = TRUE)
  check_string(python, "python", null_ok = TRUE)
  source <- bertfeat_source(path)
  if (!is.null(python) && !is.null(old <- python_too_old(python))) {
    abort_bf(sprintf(paste0("`python` (\"%s\") is Python %s, and bertfeat needs Python 3.10 or later. Pass a newer ",
                            "one (reticulate::install_python(\"3.12\") installs one)."), python, old), "argument")
  }
  if (!reticulate::virtualenv_exists(envname)) {
    reticulate::virtualenv_create(envname, python = python)
  }
  env_python <- reticulate::virtualenv_python(envname)
  if (!is.null(old <- python_too_old(env_python))) {
    abort_bf(sprintf(paste0("The virtualenv \"%s\" runs Python %s (%s), and bertfeat needs Python 3.10 or later. ",
                            "Remove it with reticulate::virtualenv_remove(\"%s\") and run install_bertfeat(python = ",
                            "\"<a Python 3.10 or later>\") again; nothing was installed."),
                     envname, old, env_python, envname), "python_unavailable")
  }
  torch_options <- if (!is.null(torch_index_url)) c("--index-url", torch_index_url) else character()
  reticulate::virtualenv_install(envname, torch_spec, pip_options = torch_options)
  reticulate::virtualenv_install(envname, source)
  message(
    "bertfeat is installed in ", env_python, " (from ", source, ").\n",
    "Restart R; bertfeat then finds this virtualenv by itself",
    if (!identical(envname, "r-bertfeat")) " once you call reticulate::use_virtualenv() on it" else "",
    ", or set RETICULATE_PYTHON=", env_python, "."
  )
  invisible(env_python)
}

# The version of `python` ("3.9") when it is older than the 3.10 bertfeat's pyproject.toml requires, else NULL (also
# when it cannot be asked). Checked before any install: pip would install torch (gigabytes) and only then refuse
# bertfeat with "requires a different Python".
python_too_old <- function(python) {
  version <- tryCatch(
    suppressWarnings(system2(python, c("-c", shQuote("import sys; print('%d.%d' % sys.version_info[:2])")),
                             stdout = TRUE, stderr = FALSE))[1],
    error = function(e) NA_character_
  )
  if (is.na(version) || !grepl("^[0-9]+\\.[0-9]+$", version)) {
    return(NULL)
  }
  if (utils::compareVersion(version, "3.10") < 0) version else NULL
}

# Where install_bertfeat() takes the Python package from: a checkout directory, or a built one, or from PyPI the
# version of this R package (the newest, "bertfeat", could take other arguments than this R package passes).
bertfeat_source <- function(path = NULL, start = getwd(), call = rlang::caller_env()) {
  if (is.null(path) && nzchar(Sys.getenv("BERTFEAT_SOURCE"))) {
    path <- Sys.getenv("BERTFEAT_SOURCE")
  }
  if (!is.null(path)) {
    check_string(path, "path", call = call)
    if (!is_bertfeat_checkout(path) && !is_bertfeat_built(path)) {
      abort_bf(
        sprintf(paste("`path` (\"%s\") is neither a bertfeat source checkout (a directory with pyproject.toml and",
                      "bertfeat/__init__.py) nor a built bertfeat wheel or sdist (bertfeat-*.whl, bertfeat-*.tar.gz)."),
                path),
        "argument", call = call
      )
    }
    return(normalizePath(path))
  }
  dir <- normalizePath(start, mustWork = FALSE)
  repeat {
    if (is_bertfeat_checkout(dir)) {
      return(dir)
    }
    parent <- dirname(dir)
    if (identical(parent, dir)) {
      return(paste0("bertfeat==", utils::packageVersion("bertfeat")))
    }
    dir <- parent
  }
}

# A wheel or sdist of bertfeat (python -m build's, pip wheel's, a release's), which pip installs as it is
is_bertfeat_built <- function(file) {
  file.exists(file) && !dir.exists(file) &&
    grepl("^bertfeat-[0-9][^/]*(\\.whl|\\.tar\\.gz|\\.zip)$", basename(file))
}

is_bertfeat_checkout <- function(dir) {
  project <- file.path(dir, "pyproject.toml")
  file.exists(project) && file.exists(file.path(dir, "bertfeat", "__init__.py")) &&
    any(grepl("^name\\s*=\\s*\"bertfeat\"", readLines(project, warn = FALSE)))
}

#' Show the Python side bertfeat is using
#'
#' Prints the Python interpreter (and what chose it), the bertfeat Python package, torch and the device that
#' `device = "auto"` resolves to; or, when the Python side is missing or broken, the error with the Python
#' searched and how to fix it. Starts Python if it is not running yet.
#'
#' @return A list of class `bertfeat_config`, invisibly: `available`, `python`, `python_version`, `chosen_by`,
#'   `bertfeat_version`, `bertfeat_path`, `torch_version`, `torch_import` (`"deepbind"` when torch was imported
#'   so that R's own BLAS library cannot shadow torch's), `device`, `numpy_version`, `reticulate_version`,
#'   `error`.
#' @examples
#' \dontrun{
#' bf_config()
#' }
#' @export
bf_config <- function() {
  leave_rng_as_found()
  config <- tryCatch(
    {
      info <- python_module()$config()
      where <- python_in_use()
      c(list(available = TRUE, chosen_by = where$forced), info)
    },
    error = function(e) {
      where <- python_in_use()
      list(available = FALSE, python = where$python, python_version = where$version, chosen_by = where$forced,
           error = conditionMessage(e))
    }
  )
  config$reticulate_version <- as.character(utils::packageVersion("reticulate"))
  config <- structure(config, class = "bertfeat_config")
  print(config)
  invisible(config)
}

#' @export
print.bertfeat_config <- function(x, ...) {
  line <- function(label, value) cat(sprintf("%-10s %s\n", label, value))
  na <- function(v) is.null(v) || (length(v) == 1L && is.na(v))
  line("R package:", sprintf("bertfeat %s, reticulate %s", utils::packageVersion("bertfeat"), x$reticulate_version))
  line("Python:", sprintf("%s%s%s", if (na(x$python)) "(none found)" else x$python,
                          if (na(x$python_version)) "" else sprintf(" (%s)", x$python_version),
                          if (na(x$chosen_by)) "" else sprintf(", chosen by %s", x$chosen_by)))
  if (!isTRUE(x$available)) {
    cat("\n", x$error, "\n", sep = "")
    return(invisible(x))
  }
  line("bertfeat:", sprintf("%s (%s)", x$bertfeat_version, x$bertfeat_path))
  line("torch:", if (na(x$torch_version)) "(not importable)" else {
    paste0(x$torch_version, if (identical(x$torch_import, "deepbind")) " (bound to its own BLAS, not R's)" else "")
  })
  line("device:", if (na(x$device)) "(unknown)" else x$device)
  line("numpy:", x$numpy_version)
  if (!na(x$error)) {
    line("problem:", x$error)
  }
  invisible(x)
}
