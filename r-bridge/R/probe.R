# R names of the Python probe's parameters that bf_probe()'s `...` takes (its help lists them: test-docs.R)
PROBE_DOTS_PARAMS <- c("max_length", "long_text", "stride", "normalize", "prefix", "prompt_name", "task",
                       "device", "dtype", "missing")

#' Choose the features by evidence: the bertfeat probe
#'
#' Scores every pooling x layer choice of one or several models on labelled texts with a cross-validated linear
#' model (logistic regression for classes, ridge for numbers), alone and side by side with TF-IDF, in one call to
#' the Python `bertfeat.probe` (one embedding pass per model). The table is the one Python gives.
#'
#' @param x A character vector (or factor) of texts.
#' @param y The labels, one per text: a factor, character or logical vector (classes) or a numeric vector
#'   (numbers with more than 10 distinct values are a regression).
#' @param model One model, or a character vector of several to compare in one table (`"default"` is the
#'   bundled all-MiniLM-L6-v2; else a Hugging Face name or a local directory).
#' @param cv Cross-validation folds.
#' @param unions How many of each model's best candidates to score side by side with TF-IDF (0 for none).
#' @param baseline Add the TF-IDF row.
#' @param plot A path for the PNG plot, or `NULL` for none.
#' @param ... Other parameters of the Python probe: `max_length`, `long_text`, `stride`, `normalize`, `prefix`,
#'   `prompt_name`, `task` (`"auto"`, `"classification"` or `"regression"`), `device`, `dtype`, `missing`.
#' @param groups `NULL`, or the group of each text (a vector as long as `x`: the customer of a review, the book of
#'   a paragraph, the patient of a note): each group's texts fall in one fold, so no model is scored on a group it
#'   was trained on (a group split across folds inflates every score, silently). Copies of a text always stay in
#'   one fold, joining their groups. `NA` is refused, as are fewer groups than `cv`.
#' @param random_state The seed of the folds' shuffle (a whole number >= 0): the same seed gives the same folds and
#'   the same scores.
#' @param cache_dir As in [bf_embed()]; with a cache, [step_bert_embed()] with the recommended settings reads the
#'   probe's vectors instead of running the model again.
#'
#' @return A list of class `bertfeat_probe`: `table`, a tibble (best first) with `rank`, `model`, `kind`
#'   (`"embedding"`, `"union"` with TF-IDF, or `"tfidf"`), `candidate`, `n_features`, `score`, `std_err` (the fold
#'   scores' standard deviation over the square root of `cv`, as if the folds were independent; their training
#'   parts overlap, so it understates the uncertainty: a yardstick between rows, not a confidence interval),
#'   `embed_s_per_1k` (the model's embedding seconds per 1,000 texts) and the settings; `recommended`, the
#'   arguments of [step_bert_embed()] for the recommended row (`model`, `pooling`, `layers`, `missing`,
#'   `cache_dir`, `options`), `NULL` when TF-IDF alone is recommended; `kind`, the recommended row's kind (for
#'   `"union"`, add a TF-IDF of the same text, for example with textrecipes, beside the step; `print()` shows the
#'   step's call); `code`, the Python code of the recommended features; `metric`; `task`; `plot`, the plot's path; `chance`, the score
#'   of a model that ignores the texts on the same folds (`name`, `score`, `std_err`: ROC AUC 0.5, the most
#'   frequent class's share for accuracy, R^2 about 0), which a row must beat to be worth anything, and `beaten`,
#'   whether the best row scores above `bar`, chance plus `2 * sqrt(2 * log(k))` standard errors for a table of k
#'   rows, which the best of k rows seldom passes on labels the texts do not predict (else `print()` notes that the
#'   recommendation may be noise); `notes`, the lines printed under the table; `left_out`, the candidates not
#'   scored, each with `model`, `candidate` and `why` (features the same for every text, such as the embedding
#'   layer's CLS vector, score chance whatever the labels); and `folds`,
#'   what the folds kept together (`n_splits`, `random_state`, `copies_kept_together`: whether some texts were
#'   copies of others, each kept in one fold, `FALSE` where every text is distinct; `n_groups`: the groups given,
#'   `NULL` without `groups`, and `n_fold_groups`: the units kept whole, groups joined by copies of a text).
#' @examples
#' \dontrun{
#' reviews <- read.csv("data/fine_foods.csv.gz")[1:500, ]
#' p <- bf_probe(reviews$review, reviews$score, plot = "probe.png", cache_dir = "~/.cache/bertfeat")
#' p$table
#' rec <- recipes::recipe(score ~ review, data = reviews)
#' rec <- do.call(step_bert_embed, c(list(rec, quote(review)), p$recommended))
#' }
#' @export
bf_probe <- function(x, y, model = "default", cv = 5, unions = 3, baseline = TRUE, plot = NULL, ...,
                     groups = NULL, random_state = 0, cache_dir = NULL) {
  leave_rng_as_found()
  call <- rlang::current_env()
  dots <- list(...)
  allowed <- PROBE_DOTS_PARAMS
  if (length(dots) && (is.null(names(dots)) || any(!nzchar(names(dots))))) {
    abort_bf("Arguments in `...` must be named, for example `max_length = 128`.", "argument", call = call)
  }
  unknown <- setdiff(names(dots), allowed)
  if (length(unknown)) {
    abort_bf(c(sprintf("Unknown argument%s %s.", if (length(unknown) > 1L) "s" else "",
                       paste0("`", unknown, "`", collapse = ", ")),
               i = paste0("`...` takes: ", paste(allowed, collapse = ", "), ".")), "argument", call = call)
  }
  input <- text_input(x, call = call)
  if (length(input$columns) != 1L) {
    abort_bf(sprintf("`x` has %d text columns; the probe scores one text column: pass a character vector, a factor or a one-column data frame, for example x$%s.",
                     length(input$columns), input$names[1]), "input", call = call)
  }
  texts <- input$columns[[1]]
  if (identical(dots$missing %||% "error", "error")) { # named by their R row, as bf_embed() names them
    check_no_missing(list(is.na(texts) | is_blank(texts)), input, call = call, nan = FALSE)
  }
  if (length(y) != length(texts) || !(is.numeric(y) || is.factor(y) || is.character(y) || is.logical(y))) {
    abort_bf(sprintf("`y` must be a vector of %d labels (one per text; factor, character, logical or numeric), not %s of length %d.",
                     length(texts), describe_class(y), length(y)), "input", call = call)
  }
  # a factor with NA as a level (addNA(), factor(exclude = NULL), forcats::fct_na_value_to_level()) is not is.na()
  # there, and its as.character() NA reached Python as the text "NA": a class of its own, silently
  y_missing <- is.na(if (is.factor(y)) as.character(y) else y)
  if (any(y_missing)) {
    abort_bf(sprintf("`y` has %d missing labels (the first in row %d); drop those rows first.", sum(y_missing),
                     which(y_missing)[1]), "missing_value", call = call)
  }
  if (is.numeric(y) && any(is.infinite(y))) { # here, or Python names the row counting from 0
    first <- which(is.infinite(y))[1]
    abort_bf(sprintf("`y` has %d infinite labels (the first in row %d: %s); scikit-learn takes finite labels only: drop or fix those rows first.",
                     sum(is.infinite(y)), first, format(y[first])), "input", call = call)
  }
  if (!is.null(groups)) {
    if (length(groups) != length(texts) || !(is.atomic(groups) || is.factor(groups)) || is.list(groups)) {
      abort_bf(sprintf("`groups` must be a vector of %d groups (one per text, such as the customer of each review), not %s of length %d.",
                       length(texts), describe_class(groups), length(groups)), "input", call = call)
    }
    groups_missing <- is.na(if (is.factor(groups)) as.character(groups) else groups) # an NA level too, as for `y`
    if (any(groups_missing)) {
      abort_bf(sprintf("`groups` has %d missing value(s) (the first in row %d); the folds keep each group's texts together and cannot place a text of no group: fill them (a text alone in its group can take a group of its own, such as its row number) or drop those rows first.",
                       sum(groups_missing), which(groups_missing)[1]), "missing_value", call = call)
    }
    # as Python reads them: a factor by its labels, whole numbers as doubles (1L and 1 one group)
    groups <- as.list(if (is.numeric(groups)) as.double(groups) else as.character(groups))
  }
  # numbers as doubles: an integer vector (read.csv()'s whole numbers) crossed as Python ints, which the probe's
  # task = "auto" reads as classes whatever their count, where the help says numbers past 10 values are a regression
  # (whole numbers that are classes cross back as ints: bertfeat._r._r_labels); TRUE/FALSE as Python's booleans,
  # which a refusal shows as TRUE/FALSE (as text, "FALSE")
  y <- if (is.numeric(y)) as.double(y) else if (is.logical(y)) y else as.character(y)
  if (!is.character(model) || !length(model) || anyNA(model) || any(!nzchar(model))) {
    abort_bf(sprintf("`model` must be a character vector of model names or paths, not %s.", show_value(model)),
             "argument", call = call)
  }
  params <- list(model = as.list(model), cv = check_whole(cv, "cv", max_length = 1L, call = call),
                 unions = check_whole(unions, "unions", max_length = 1L, call = call),
                 baseline = check_flag(baseline, "baseline", call = call), groups = groups,
                 random_state = check_seed(random_state, call = call),
                 plot = if (!is.null(plot)) path.expand(check_string(plot, "plot", call = call)),
                 cache_dir = if (!is.null(cache_dir)) path.expand(check_string(cache_dir, "cache_dir", call = call)))
  for (name in names(dots)) {
    value <- dots[[name]]
    params[[name]] <- if (is.null(value)) NULL else if (name %in% c("max_length", "stride")) {
      check_whole(value, name, max_length = 1L, call = call)
    } else if (name == "normalize") {
      check_flag(value, name, call = call)
    } else if (name %in% names(CHOICE_PARAMS)) { # long_text, dtype, as bf_embed() checks them
      check_choice(check_string(value, name, call = call), name, CHOICE_PARAMS[[name]], call = call)
    } else {
      check_string(value, name, call = call)
    }
  }
  params <- params[!vapply(params, is.null, logical(1))]
  mask <- is.na(texts)
  texts[mask] <- ""
  res <- with_python_errors(python_module(call = call)$probe(texts, mask, y, params), call = call)
  # the warnings come last (an older bertfeat._r gave 10 values, without `notes` and `left_out`)
  issue_python_warnings(res[[length(res)]])
  columns <- res[[1]]
  table <- tibble::as_tibble(lapply(columns, function(v) {
    v <- unlist(v)
    if (is.character(v)) v[!nzchar(v)] <- NA_character_ else v[is.nan(v)] <- NA_real_
    v
  }))
  for (name in c("rank", "n_features", "layer", "n_layers")) {
    table[[name]] <- as.integer(table[[name]])
  }
  structure(
    list(table = table, recommended = step_arguments(res[[2]]), kind = res[[3]], code = res[[4]],
         metric = res[[5]], task = res[[6]], plot = res[[7]], chance = res[[8]], folds = res[[9]],
         notes = if (length(res) >= 12L) as.character(unlist(res[[10]])) else character(0),
         left_out = if (length(res) >= 12L) res[[11]] else list()),
    class = "bertfeat_probe"
  )
}

# The recommended BertEmbedder parameters as step_bert_embed() arguments.
step_arguments <- function(rec) {
  if (is.null(rec)) {
    return(NULL)
  }
  rec <- lapply(rec, function(v) if (is.list(v)) unlist(v) else v)
  main <- c("model", "pooling", "layers", "missing", "cache_dir")
  out <- list(model = rec$model, pooling = rec$pooling, layers = as.integer(rec$layers),
              missing = rec$missing %||% "error", cache_dir = rec$cache_dir,
              options = rec[setdiff(names(rec), main)])
  out[!vapply(out, is.null, logical(1))]
}

#' @export
print.bertfeat_probe <- function(x, ...) {
  folds <- x$folds
  kept <- if (is.null(folds)) "" else sprintf(" (seed %d%s)", folds$random_state, if (is.null(folds$n_groups)) "" else
    if (folds$n_fold_groups == folds$n_groups) sprintf("; %d groups, each in one fold", folds$n_groups) else
      sprintf("; %d groups, each in one fold, joined into %d by copies of a text", folds$n_groups, folds$n_fold_groups))
  cat(sprintf("bertfeat probe: %s, %scross-validated %s%s; recommended (%s):\n", x$task,
              if (is.null(folds)) "" else sprintf("%d-fold ", folds$n_splits), x$metric, kept, x$kind))
  cat(r_recommendation(x), "\n\n")
  print(x$table[, c("rank", "model", "kind", "candidate", "n_features", "score", "std_err")], ...)
  # Python's own lines (chance, the candidates left out, the note when no row beats chance clearly): the same words
  # as its print and the command line's
  if (length(x$notes)) {
    cat(x$notes, sep = "\n")
  } else if (!is.null(x$chance)) { # an older bertfeat._r gave no notes
    cat(sprintf("%s: %.4f +/- %.4f\n", x$chance$name, x$chance$score, x$chance$std_err))
  }
  invisible(x)
}

# The recommendation as R code for print(): the step_bert_embed() call of `recommended` (it printed `code`, Python's
# "from bertfeat import BertEmbedder ...", to R users), with the TF-IDF a union or TF-IDF alone adds said in words.
r_recommendation <- function(x) {
  tfidf <- function(which) {
    paste("a TF-IDF of", which, "(word 1-2 grams of at least 2 texts, sublinear tf; for example",
          "textrecipes::step_tokenize() and step_tfidf())")
  }
  if (is.null(x$recommended)) {
    return(tfidf("the text alone"))
  }
  args <- x$recommended
  args <- args[!(names(args) %in% c("model", "missing") &
                   vapply(args, function(v) identical(v, "default") || identical(v, "error"), logical(1)))]
  if (length(args$options) == 0L) {
    args$options <- NULL
  }
  shown <- vapply(names(args), function(name) paste(name, "=", r_code(args[[name]])), character(1))
  step <- sprintf("step_bert_embed(<text column>, %s)", paste(shown, collapse = ", "))
  if (identical(x$kind, "union")) paste0(step, "\nbeside ", tfidf("the same text")) else step
}

# `value` (a string, number, logical or named list of those) as R code: c(-4, -3, -2, -1), not deparse()'s -4:-1
r_code <- function(value) {
  if (is.list(value)) {
    return(sprintf("list(%s)", paste(names(value), "=", vapply(value, r_code, character(1)), collapse = ", ")))
  }
  items <- if (is.character(value)) encodeString(value, quote = "\"") else format(value, scientific = FALSE, trim = TRUE)
  if (length(items) == 1L) items else sprintf("c(%s)", paste(items, collapse = ", "))
}

# the folds' shuffle seed: a negative one passed check_whole() and was refused by Python in its own words
check_seed <- function(value, call) {
  value <- check_whole(value, "random_state", max_length = 1L, call = call)
  if (value < 0L) {
    abort_bf(sprintf("`random_state` must be a whole number >= 0 (the seed of the folds' shuffle), not %d.", value),
             "argument", call = call)
  }
  value
}
