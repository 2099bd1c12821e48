# The Python module, bound lazily in .onLoad: nothing starts Python until the first embedding, so
# reticulate::use_virtualenv() and friends still work after library(bertfeat).
bertfeat_py <- NULL

# Per-session Python handles (the helper module bertfeat._r once it imported).
.state <- new.env(parent = emptyenv())

.onLoad <- function(libname, pkgname) {
  # A delay-loaded import is how reticulate learns which module this package needs: its Python discovery then
  # prefers a Python that can import bertfeat, including the virtualenv "r-bertfeat" made by install_bertfeat().
  # Deliberately no Config/reticulate in DESCRIPTION and no py_require(): both let reticulate pip-install
  # bertfeat (and an unpinned, multi-gigabyte torch) on its own, which install_bertfeat() leaves to the user.
  bertfeat_py <<- reticulate::import(
    "bertfeat",
    delay_load = list(on_error = function(e) abort_python_unavailable(e, call = NULL))
  )
}

# bertfeat._r, imported on first use; any failure is a classed error naming the Python and the fix.
python_module <- function(call = rlang::caller_env()) {
  if (!is.null(.state$r_module)) {
    return(.state$r_module)
  }
  module <- tryCatch(
    {
      if (reticulate::py_available(initialize = FALSE)) {
        # Python is running (maybe after a failed attempt, which leaves the proxy unusable): import directly
        reticulate::import("bertfeat")
      } else {
        reticulate::py_get_attr(bertfeat_py, "__version__") # starts Python through the delay-loaded proxy
      }
      module <- reticulate::import("bertfeat._r")
      check_python_side(module, call = call)
      # before anything else can: torch imported so that R's libblas cannot shadow its BLAS (see bertfeat/_r.py)
      module$`_import_torch`()
      module
    },
    error = function(e) e
  )
  if (inherits(module, "bertfeat_error")) {
    stop(module)
  }
  if (inherits(module, "error")) {
    abort_python_unavailable(module, call = call)
  }
  .state$r_module <- module
  module
}

# What this R package calls in bertfeat._r, and how: `n` arguments by position, the `named` ones by name
# (test-python-setup.R holds both to the calls in the code). The R package and the Python one are installed apart:
# an R package updated over a virtualenv's older bertfeat (install_bertfeat() run once, long ago) found a function
# missing at the call, "module \"bertfeat._r\" has no attribute \"read_features\"", or one that takes other
# arguments (Python's "got an unexpected keyword argument 'on_line'"), and nothing said which package or what to do.
# Checked once, at import, against the functions' signatures.
PYTHON_SIDE <- list(
  `_import_torch` = list(),
  column_form_hint = list(n = 2L),
  config = list(),
  describe = list(n = 2L),
  embed = list(n = 4L),
  input_found = list(n = 1L),
  probe = list(n = 4L),
  r_advice = list(n = 1L),
  read_features = list(n = 1L),
  run_cli = list(n = 1L, named = "on_line")
)

# The parameters R passes by name (in `params`) to bertfeat.BertEmbedder (bf_embed(), the step) and, after the texts
# and the labels, to bertfeat.probe (bf_probe()): each function's own arguments and what its `...` takes
# (test-python-setup.R holds them to the names the code puts in `params`).
python_params <- function() {
  list(
    BertEmbedder = list(named = c("model", "pooling", "layers", "missing", "cache_dir", DOTS_PARAMS)),
    probe = list(n = 2L, named = c("model", "cv", "unions", "baseline", "groups", "random_state", "plot",
                                   "cache_dir", PROBE_DOTS_PARAMS))
  )
}

check_python_side <- function(module, call = rlang::caller_env()) {
  absent <- names(PYTHON_SIDE)[!vapply(names(PYTHON_SIDE), function(name) reticulate::py_has_attr(module, name),
                                       logical(1))]
  bertfeat <- reticulate::import("bertfeat")
  version <- tryCatch(as.character(reticulate::py_get_attr(bertfeat, "__version__")), error = function(e) "no version")
  where <- python_in_use()
  if (length(absent)) {
    abort_bf(
      c(
        sprintf("The bertfeat Python package (%s, in %s) is older than this R package (%s): its bertfeat._r has no %s.",
                version, dirname(bertfeat$`__file__`), utils::packageVersion("bertfeat"),
                paste(absent, collapse = ", ")),
        python_side_fix(where)
      ),
      "python_unavailable",
      python = where$python,
      call = call
    )
  }
  refused <- c(
    unlist(Map(function(name, passes) refused_arguments(module, name, paste0("bertfeat._r.", name), passes),
               names(PYTHON_SIDE), PYTHON_SIDE)),
    unlist(Map(function(name, passes) refused_arguments(bertfeat, name, paste0("bertfeat.", name), passes),
               names(python_params()), python_params()))
  )
  if (length(refused)) {
    abort_bf(
      c(
        sprintf("The bertfeat Python package (%s, in %s) does not take what this R package (%s) passes it:",
                version, dirname(bertfeat$`__file__`), utils::packageVersion("bertfeat")),
        stats::setNames(refused, rep("x", length(refused))),
        python_side_fix(where)
      ),
      "python_unavailable",
      python = where$python,
      call = call
    )
  }
  invisible()
}

# Why Python's `module.name` cannot be called as this R package calls it (`passes`: list(n =, named =)), in Python's
# words ("bertfeat._r.embed(): missing a required argument: 'batch'"), or naming every keyword it does not take
# ("bertfeat.BertEmbedder() takes no prefix, prompt_name"); NULL when it can. inspect's bind() takes the arguments as
# the call would, without calling: a keyword the function lacks, a required argument R does not pass, too many by
# position.
refused_arguments <- function(module, name, label, passes) {
  fn <- tryCatch(reticulate::py_get_attr(module, name), error = function(e) NULL)
  if (is.null(fn)) {
    return(sprintf("%s is missing", label))
  }
  named <- as.character(passes[["named"]]) # [[ ]]: `$n` would take `named` where there is no `n`
  nulls <- function(names) stats::setNames(rep(list(NULL), length(names)), names)
  binds <- function(method, args) {
    tryCatch({
      inspect <- reticulate::import("inspect", convert = FALSE)
      do.call(reticulate::py_call, c(list(reticulate::py_get_attr(inspect$signature(fn), method)), args))
      NULL
    }, error = function(e) {
      reason <- sub("\\s+$", "", strsplit(conditionMessage(e), "\n", fixed = TRUE)[[1]][1])
      sub("^[A-Za-z_.]*(Error|Exception): ", "", reason)
    })
  }
  lacks <- named[vapply(named, function(arg) !is.null(binds("bind_partial", nulls(arg))), logical(1))]
  if (length(lacks)) {
    return(sprintf("%s() takes no %s", label, paste(lacks, collapse = ", ")))
  }
  reason <- binds("bind", c(rep(list(NULL), passes[["n"]] %||% 0L), nulls(named)))
  if (is.null(reason)) NULL else sprintf("%s(): %s", label, reason)
}

# How to bring the Python side to this R package's version (install_bertfeat() installs that version).
python_side_fix <- function(where) {
  c(
    i = sprintf("Python in use: %s%s", where$python,
                if (is.na(where$forced)) "" else sprintf(", chosen by %s", where$forced)),
    "To fix it, then restart R:",
    "*" = sprintf(paste("run `bertfeat::install_bertfeat()` to match versions (it installs bertfeat %s) if it made",
                        "this Python's virtualenv; or"), utils::packageVersion("bertfeat")),
    "*" = sprintf(paste("run `%s -m pip install \"bertfeat==%s\"`",
                        "(or pip install the checkout this R package came from)."),
                  where$python, utils::packageVersion("bertfeat"))
  )
}

# Whether the Python side can be reached (for tests/testthat.R: R CMD check without it skips the tests).
python_side_available <- function() {
  tryCatch({
    python_module()
    TRUE
  }, error = function(e) FALSE)
}

# Run a call into Python; a Python exception becomes a classed R error with Python's own message.
with_python_errors <- function(expr, call = rlang::caller_env()) {
  tryCatch(expr, error = function(e) {
    if (inherits(e, "bertfeat_error")) {
      stop(e)
    }
    text <- sub("\\s+$", "", conditionMessage(e))
    type <- regmatches(text, regexpr("^[A-Za-z_][A-Za-z0-9_.]*(Error|Exception|Warning)(?=: )", text, perl = TRUE))
    type <- if (length(type)) sub(".*\\.", "", type) else "Exception"
    if (type %in% c("ImportError", "ModuleNotFoundError")) {
      abort_python_unavailable(e, call = call)
    }
    message <- r_advice(sub("^[A-Za-z_][A-Za-z0-9_.]*: ", "", text))
    abort_bf(message, "python", python_type = type, call = call)
  })
}

# A Python message's advice in R's syntax (missing = "zero", not missing='zero'; bertfeat._r.r_advice). The message
# as it was if Python cannot be reached.
r_advice <- function(message) {
  tryCatch(python_module()$r_advice(message), error = function(e) message)
}

# Which Python reticulate is using (or would use), for error messages and bf_config().
python_in_use <- function() {
  config <- if (reticulate::py_available(initialize = FALSE)) {
    reticulate::py_config()
  } else {
    tryCatch(reticulate::py_discover_config("bertfeat"), error = function(e) NULL)
  }
  requested <- Sys.getenv("RETICULATE_PYTHON", unset = NA)
  list(
    python = if (!is.null(config)) config$python else if (!is.na(requested)) requested else NA_character_,
    version = if (!is.null(config)) as.character(config$version) else NA_character_,
    forced = if (!is.null(config) && !is.null(config$forced)) config$forced else NA_character_,
    searched = if (!is.null(config)) unique(config$python_versions) else character(),
    requested = requested
  )
}

abort_python_unavailable <- function(error, call = rlang::caller_env()) {
  where <- python_in_use()
  reason <- sub("\\s+$", "", strsplit(conditionMessage(error), "\n", fixed = TRUE)[[1]][1])
  python <- if (is.na(where$python)) {
    "reticulate found no Python"
  } else {
    sprintf("Python in use: %s%s%s", where$python,
            if (is.na(where$version)) "" else sprintf(" (%s)", where$version),
            if (is.na(where$forced)) "" else sprintf(", chosen by %s", where$forced))
  }
  searched <- setdiff(where$searched, where$python)
  abort_bf(
    c(
      "The Python side of bertfeat is not available.",
      x = reason,
      i = python,
      i = if (length(searched)) paste("Also searched:", paste(searched, collapse = ", ")),
      "To fix it, then restart R:",
      "*" = "run `bertfeat::install_bertfeat()`: it creates the virtualenv \"r-bertfeat\" with bertfeat and torch, which bertfeat then finds by itself; or",
      "*" = sprintf(paste("set the environment variable RETICULATE_PYTHON to a Python where",
                          "`pip install \"bertfeat==%s\"` (this R package's version) has been run."),
                    utils::packageVersion("bertfeat")),
      i = "`bertfeat::bf_config()` shows what is in use."
    ),
    "python_unavailable",
    python = where$python,
    call = call
  )
}

# reticulate writes R's random number state back on every call into Python, creating `.Random.seed` where there
# was none: nothing is drawn, but the future package takes the new seed for random numbers drawn in a future and
# warns "UNRELIABLE VALUE: ... unexpectedly generated random numbers" at each bf_embed() in future_lapply() and
# friends. Each exported function that calls Python removes a `.Random.seed` that was not there when it began; its
# arguments are evaluated first, so that a seed their own code makes (`bf_embed(sample(texts))`) stays.
leave_rng_as_found <- function(frame = parent.frame()) {
  for (name in setdiff(names(formals(sys.function(sys.parent()))), "...")) {
    if (!eval(call("missing", as.name(name)), frame)) {
      get(name, envir = frame) # forces the argument's promise
    }
  }
  if (!exists(".Random.seed", envir = globalenv(), inherits = FALSE)) {
    do.call(on.exit, list(quote(drop_rng_seed()), add = TRUE), envir = frame)
  }
  invisible()
}

drop_rng_seed <- function() {
  if (exists(".Random.seed", envir = globalenv(), inherits = FALSE)) {
    rm(".Random.seed", envir = globalenv())
  }
}
