# Every error bertfeat raises on purpose has class "bertfeat_error" plus one of:
#   bertfeat_error_argument            a parameter has a value bertfeat cannot use
#   bertfeat_error_input               the texts are not text (numeric input, a non-text column, bad UTF-8)
#                                      or a file is not bertfeat's output (bf_read_features())
#   bertfeat_error_missing_column      a column the step or the call needs is not in the data
#   bertfeat_error_missing_value       an NA under missing = "error"
#   bertfeat_error_python_unavailable  the Python side cannot be imported (which Python, and how to fix it)
#   bertfeat_error_python              the Python side raised while embedding (its message is kept, its advice
#                                      in R's syntax: r_advice())
#   bertfeat_error_model_changed       a prepped step's model now resolves to different files, or the step
#                                      now makes other features than prep() recorded
#   bertfeat_error_cli                 the command line exited non-zero (its stderr is kept)
#   bertfeat_error_file                an input file does not exist
# so callers can catch them by class, and tests lock the messages with snapshots.

abort_bf <- function(message, class, ..., call = rlang::caller_env()) {
  rlang::abort(message, class = c(paste0("bertfeat_error_", class), "bertfeat_error"), ..., call = call)
}

# `x` as R code would show it, shortened: for messages that quote what the user passed.
show_value <- function(x) {
  if (is.null(x)) {
    return("NULL")
  }
  text <- paste(deparse(x, width.cutoff = 60L, nlines = 2L), collapse = " ")
  if (nchar(text) > 60L) paste0(substr(text, 1L, 57L), "...") else text
}

check_choice <- function(value, arg, choices, call = rlang::caller_env()) {
  if (!is.character(value) || length(value) != 1L || is.na(value) || !value %in% choices) {
    abort_bf(
      sprintf("`%s` must be one of %s, not %s.", arg, or_list(paste0('"', choices, '"')), show_value(value)),
      "argument", call = call
    )
  }
  value
}

or_list <- function(items) {
  if (length(items) < 2L) items else paste(paste(utils::head(items, -1L), collapse = ", "), "or", utils::tail(items, 1L))
}

check_flag <- function(value, arg, call = rlang::caller_env()) {
  if (!is.logical(value) || length(value) != 1L || is.na(value)) {
    abort_bf(sprintf("`%s` must be TRUE or FALSE, not %s.", arg, show_value(value)), "argument", call = call)
  }
  value
}

check_string <- function(value, arg, null_ok = FALSE, call = rlang::caller_env()) {
  if (null_ok && is.null(value)) {
    return(NULL)
  }
  if (!is.character(value) || length(value) != 1L || is.na(value) || !nzchar(value)) {
    abort_bf(
      sprintf("`%s` must be a single non-empty string%s, not %s.", arg, if (null_ok) " or NULL" else "",
              show_value(value)),
      "argument", call = call
    )
  }
  utf8_option(value, arg, call = call)
}

# Strings that cross to Python as UTF-8: unmarked bytes that are not UTF-8 would arrive as "<e9>" (see as_utf8()).
utf8_option <- function(value, arg, call = rlang::caller_env()) {
  res <- as_utf8(value)
  if (length(res$bad)) {
    abort_bf(
      c(sprintf("`%s` is not valid UTF-8 (%s).", arg, encodeString(value[res$bad[1]], quote = "\"")),
        i = encoding_advice(arg)),
      "argument", call = call
    )
  }
  res$values
}

# How to make `what` UTF-8: from Windows-1252, what Excel and write.csv on Windows write, and whose letters are
# Latin-1's; read as Latin-1 its curly quotes, dashes and euro signs become invisible control characters, which the
# tokenizer drops, silently (the command line advises cp1252 alike).
encoding_advice <- function(what, assign = FALSE) {
  sprintf("Fix the encoding first, for example with %siconv(%s, from = \"CP1252\", to = \"UTF-8\") (text written on Windows, by Excel or write.csv there, or in Latin-1).",
          if (assign) paste(what, "<- ") else "", what)
}

POOLINGS <- c("cls", "mean", "max")

# "mean", "cls+mean" or c("cls", "mean"); returned as given, for Python to parse the same way.
check_pooling <- function(pooling, call = rlang::caller_env()) {
  ok <- is.character(pooling) && length(pooling) >= 1L && !anyNA(pooling)
  if (ok) {
    parts <- trimws(unlist(strsplit(pooling, "+", fixed = TRUE)))
    ok <- length(parts) >= 1L && all(parts %in% POOLINGS) && !anyDuplicated(parts)
  }
  if (!ok) {
    abort_bf(
      c(
        sprintf("`pooling` must be \"cls\", \"mean\" or \"max\", or a \"+\"-joined combination such as \"cls+mean\", not %s.",
                show_value(pooling)),
        i = "Name each pooling at most once; the pooled vectors are concatenated in the order given."
      ),
      "argument", call = call
    )
  }
  pooling
}

# Whole numbers as integers (Python's layer and length checks reject floats such as -1.0).
check_whole <- function(value, arg, min_length = 1L, max_length = Inf, call = rlang::caller_env()) {
  ok <- is.numeric(value) && length(value) >= min_length && length(value) <= max_length && !anyNA(value) &&
    all(is.finite(value)) && all(value == round(value)) && all(abs(value) <= .Machine$integer.max)
  if (!ok) {
    what <- if (max_length == 1L) "a whole number" else "a vector of whole numbers"
    abort_bf(sprintf("`%s` must be %s, not %s.", arg, what, show_value(value)), "argument", call = call)
  }
  as.integer(value)
}
