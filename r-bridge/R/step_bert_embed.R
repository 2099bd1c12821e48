#' BERT embeddings of text columns, as a recipes step
#'
#' `step_bert_embed()` creates a *specification* of a recipe step that replaces text columns by the features of
#' a frozen BERT-family model, computed by [bf_embed()]. Nothing is learned from the training data: `prep()`
#' checks the columns and records the feature names and the recipe's fingerprint, and `bake()` embeds (training
#' or new data) in one Python call per step, sharing the cache in `cache_dir` with every other bertfeat run.
#'
#' The new columns are named as in Python, `{column}_{pooling}_{index}` (for example `review_cls_000`), and
#' take the role given by `role`.
#'
#' # Tidying
#'
#' When you [`tidy()`][recipes::tidy.recipe()] this step, a tibble is returned with columns `terms` (the
#' selectors or, once trained, the columns), `model`, `pooling`, `layers` (comma-separated: as given until
#' trained, then the model's layers the features come from, for example `"3,4,5,6"` for the default's last four
#' of six), `n_features` (`NA` until trained) and `id`.
#'
#' @param recipe A recipe object. The step will be added to the sequence of operations for this recipe.
#' @param ... One or more selector functions to choose which text columns are embedded. See
#'   [recipes::selections()] for more details.
#' @param role The role of the new feature columns; by default `"predictor"`.
#' @param trained A logical to indicate if the step has been trained.
#' @param columns The names of the selected columns, set by [recipes::prep()].
#' @param model,pooling,layers,missing,cache_dir As in [bf_embed()].
#' @param options A named list of further parameters of [bf_embed()], such as
#'   `list(max_length = 256, long_text = "chunk")`.
#' @param keep_original_cols A logical to keep the original text columns (by default they are removed).
#' @param features The feature names, set by [recipes::prep()]; `bake()` gives exactly these columns, or refuses.
#' @param fingerprint The fingerprint of the embedding recipe (model content, pooling, layers, ...), set by
#'   [recipes::prep()]; `bake()` checks the model still resolves to the same files.
#' @param layers_used The model's layers the features come from (`layers` resolved against the model), set by
#'   [recipes::prep()].
#' @param dtype_used The precision the features are computed in (`dtype = "auto"` resolved on the machine that
#'   prepped, for example `"bfloat16"` on a GPU), set by [recipes::prep()]; `bake()` keeps it on any machine.
#' @param model_dir The directory a relative `model` path named when prepped (absolute), set by [recipes::prep()]:
#'   `bake()` from another working directory then says where the model was.
#' @param skip A logical. Should the step be skipped when the recipe is baked by [recipes::bake()]?
#' @param id A character string that is unique to this step to identify it.
#'
#' @return An updated version of `recipe` with the new step added to the sequence of any existing operations.
#' @seealso [bf_embed()]
#' @examples
#' \dontrun{
#' library(recipes)
#' train <- data.frame(review = c("Loved it.", "Dreadful.", "Fine."), score = c(5, 1, 3))
#' test <- data.frame(review = c("Not bad at all."), score = 4)
#'
#' rec <- recipe(score ~ review, data = train) |>
#'   step_bert_embed(review, cache_dir = "~/.cache/bertfeat") |>
#'   prep()
#' bake(rec, new_data = test) # score, review_cls_000, ..., review_mean_383
#' tidy(rec, number = 1)
#' }
#' @export
step_bert_embed <- function(recipe, ..., role = "predictor", trained = FALSE, columns = NULL,
                            model = "default", pooling = "cls+mean", layers = NULL, options = list(),
                            missing = "error", cache_dir = NULL, keep_original_cols = FALSE, features = NULL,
                            fingerprint = NULL, layers_used = NULL, dtype_used = NULL, model_dir = NULL,
                            skip = FALSE,
                            id = recipes::rand_id("bert_embed")) {
  # the parameters are checked now, so a mistake shows where the recipe is written rather than at prep()
  check_step_arguments(model, pooling, layers, missing, cache_dir, options, keep_original_cols)

  recipes::add_step(
    recipe,
    step_bert_embed_new(
      terms = rlang::enquos(...),
      role = role,
      trained = trained,
      columns = columns,
      model = model,
      pooling = pooling,
      layers = layers,
      options = options,
      missing = missing,
      cache_dir = cache_dir,
      keep_original_cols = keep_original_cols,
      features = features,
      fingerprint = fingerprint,
      layers_used = layers_used,
      dtype_used = dtype_used,
      model_dir = model_dir,
      skip = skip,
      id = id
    )
  )
}

# The step's own arguments, checked by step_bert_embed() and again by prep(): update() sets them past the first.
# Returns the Python parameters.
check_step_arguments <- function(model, pooling, layers, missing, cache_dir, options, keep_original_cols,
                                 call = rlang::caller_env()) {
  if (!is.list(options) || (length(options) && (is.null(names(options)) || any(!nzchar(names(options)))))) {
    abort_bf(sprintf("`options` must be a named list such as list(max_length = 256), not %s.", show_value(options)),
             "argument", call = call)
  }
  params <- embedder_params(model, pooling, layers, missing, cache_dir, options[setdiff(names(options), "columns")],
                            step = TRUE, call = call)
  if ("columns" %in% names(options)) {
    abort_bf("Select the columns with the step's selectors, not `options$columns`.", "argument", call = call)
  }
  check_flag(keep_original_cols, "keep_original_cols", call = call)
  params
}

step_bert_embed_new <- function(terms, role, trained, columns, model, pooling, layers, options, missing,
                                cache_dir, keep_original_cols, features, fingerprint, layers_used, dtype_used,
                                model_dir, skip, id) {
  recipes::step(
    subclass = "bert_embed",
    terms = terms,
    role = role,
    trained = trained,
    columns = columns,
    model = model,
    pooling = pooling,
    layers = layers,
    options = options,
    missing = missing,
    cache_dir = cache_dir,
    keep_original_cols = keep_original_cols,
    features = features,
    fingerprint = fingerprint,
    layers_used = layers_used,
    dtype_used = dtype_used,
    model_dir = model_dir,
    skip = skip,
    id = id,
    # saveRDS() writes a namespace as a reference that readRDS() loads: a recipe read in a new R session (a plumber
    # API, a Shiny app, a parallel worker) has bake(), print() and tidy() for this step without library(bertfeat),
    # where recipes alone said "no applicable method for 'bake'". Python starts only when bake() embeds.
    namespace = asNamespace("bertfeat")
  )
}

#' @export
prep.step_bert_embed <- function(x, training, info = NULL, ...) {
  leave_rng_as_found()
  call <- NULL # recipes already says the error came from step_bert_embed()
  params <- check_step_arguments(x$model, x$pooling, x$layers, x$missing, x$cache_dir, x$options,
                                 recipes::get_keep_original_cols(x), call = call)
  col_names <- recipes::recipes_eval_select(x$terms, training, info)
  features <- character()
  fingerprint <- NULL
  layers_used <- NULL
  dtype_used <- NULL
  if (length(col_names)) {
    for (name in col_names) {
      check_text_column(training[[name]], name, "the training data", call = call)
    }
    # the feature names and fingerprint come from the Python recipe, without embedding anything
    described <- with_python_errors(python_module()$describe(as.list(unname(col_names)), params), call = call)
    issue_python_warnings(described[[3]])
    features <- unlist(described[[1]])
    fingerprint <- described[[2]]
    layers_used <- as.integer(unlist(described[[4]]))
    dtype_used <- described[[5]]
  }
  step_bert_embed_new(
    terms = x$terms,
    role = x$role,
    trained = TRUE,
    columns = col_names,
    model = x$model,
    pooling = x$pooling,
    layers = x$layers,
    options = x$options,
    missing = x$missing,
    cache_dir = x$cache_dir,
    keep_original_cols = recipes::get_keep_original_cols(x),
    features = features,
    fingerprint = fingerprint,
    layers_used = layers_used,
    dtype_used = dtype_used,
    model_dir = relative_model_dir(x$model),
    skip = x$skip,
    id = x$id
  )
}

#' @export
bake.step_bert_embed <- function(object, new_data, ...) {
  leave_rng_as_found()
  col_names <- object$columns
  if (!length(col_names)) {
    return(new_data)
  }
  call <- rlang::call2("step_bert_embed")
  absent <- setdiff(col_names, names(new_data))
  if (length(absent)) {
    abort_missing_columns(absent, names(new_data), "the data given to bake()", call = call)
  }
  clash <- intersect(object$features, setdiff(names(new_data), col_names))
  if (length(clash)) {
    abort_bf(
      c(sprintf("The data given to bake() already has column%s named like the new features: %s.",
                if (length(clash) > 1L) "s" else "", paste0("`", utils::head(clash, 5L), "`", collapse = ", ")),
        i = "Rename or remove those columns first."),
      "argument", call = call
    )
  }

  if (nrow(new_data) == 0L) {
    # bake() on zero rows (as tidymodels does for prototypes) needs no model
    features <- matrix(numeric(), nrow = 0L, ncol = length(object$features), dimnames = list(NULL, object$features))
  } else {
    if (!is.null(object$model_dir) && !dir.exists(object$model)) {
      abort_bf(
        c(sprintf(paste("model = \"%s\" is a relative path, read from the working directory (%s), which holds no",
                        "such directory."), object$model, normalizePath(getwd())),
          i = sprintf(paste("When this step was prepped it was %s. Name the model by its absolute path in the prepped",
                            "step (for example `rec$steps[[1]]$model <- \"%s\"`); bake() checks it holds the same model."),
                      object$model_dir, object$model_dir)),
        "model_changed", call = call
      )
    }
    options <- object$options
    if (!is.null(object$dtype_used) && identical(options$dtype %||% "auto", "auto")) {
      # "auto" was resolved at prep() (bfloat16 on a GPU): the same recipe on a CPU, as Python's fit fixes it
      options$dtype <- object$dtype_used
    }
    res <- tryCatch(
      rlang::exec(
        embed_request, new_data[col_names], !!!options,
        model = object$model, pooling = object$pooling, layers = object$layers, missing = object$missing,
        cache_dir = object$cache_dir, where = "the data given to bake()", call = call
      ),
      bertfeat_error_python = function(e) abort_with_step_settings(e, object, call = call),
      # a served recipe's first NA: bake() takes no `missing`, the prepped step holds it
      bertfeat_error_missing_value = function(e) {
        abort_bf(
          c(conditionMessage(e),
            i = sprintf(paste("This step was prepped with `missing = \"%s\"`; to embed missing texts from now on, set it in",
                              "the prepped step, for example `rec$steps[[1]]$missing <- \"zero\"` (the other rows'",
                              "features stay the same)."), object$missing)),
          "missing_value", row = e$row, call = call
        )
      }
    )
    check_features_as_prepped(res, object, call = call)
    features <- res$matrix
  }
  features <- tibble::as_tibble(unname_rows(features))
  keep <- if (recipes::get_keep_original_cols(object)) names(new_data) else setdiff(names(new_data), col_names)
  tibble::as_tibble(c(as.list(new_data[keep]), as.list(features)))
}

# bake() gives exactly the columns prep() recorded (names, order, count), under the same fingerprint, or refuses: a
# pooling, layers or options edited in the prepped step, or a bertfeat that names its features otherwise than the one
# that prepped (`_l2` became `_l02`), gave other columns under the step's name, or the same columns renamed, silently.
check_features_as_prepped <- function(res, object, call) {
  now <- res$feature_names
  recorded <- object$features
  if (!identical(now, recorded)) {
    n <- min(length(now), length(recorded))
    first <- which(now[seq_len(n)] != recorded[seq_len(n)])[1]
    abort_bf(
      c(sprintf("This step now makes %d features where prep() recorded %d%s.", length(now), length(recorded),
                if (is.na(first)) "" else sprintf(", named otherwise from `%s` (prep(): `%s`)", now[first],
                                                  recorded[first])),
        i = if (identical(res$fingerprint, object$fingerprint)) {
          paste("The embeddings are the same, but this bertfeat names them otherwise than the one that prepped the",
                "step; prep the recipe again (and fit what was fitted on the baked columns again).")
        } else {
          sprintf(paste("Its `pooling`, `layers` or `options` changed in the prepped step, or model = \"%s\" now holds",
                        "another model; set them back, or prep the recipe again (and fit what was fitted on the baked",
                        "columns again)."), object$model)
        }),
      "model_changed", call = call
    )
  }
  if (!identical(res$fingerprint, object$fingerprint)) {
    abort_bf(
      c(sprintf("model = \"%s\" now gives different embeddings than when this step was prepped.", object$model),
        i = paste("The model files, the step's `options` (`max_length`, `prefix`, `normalize`, ...) or bertfeat's",
                  "embedding format changed since prep(); set the options back, or prep the recipe again.")),
      "model_changed", call = call
    )
  }
}

# A recipe saved with saveRDS() keeps the paths and device of the machine that prepped it (/home/alice/.cache/bertfeat
# or /home/alice/models/minilm on a server with no /home/alice, "cuda" on a CPU server): where Python refused one
# that does not hold here, say how to give the prepped step another. Other errors as they came.
abort_with_step_settings <- function(error, object, call) {
  advice <- NULL
  cache_dir <- if (is.null(object$cache_dir)) NULL else path.expand(object$cache_dir)
  if (identical(error$python_type, "CacheError") && !is.null(cache_dir) &&
      !(dir.exists(cache_dir) && file.access(cache_dir, 2L) == 0L)) {
    advice <- paste("This step was prepped with that `cache_dir`, and a prepped recipe keeps it on every machine. Set",
                    "one for this machine in the prepped step, for example",
                    "`rec$steps[[1]]$cache_dir <- \"~/.cache/bertfeat\"`, or `rec$steps[[1]]$cache_dir <- NULL` for no cache.")
  } else if (grepl(ABSOLUTE_PATH, object$model) && !dir.exists(path.expand(object$model))) {
    advice <- paste("This step was prepped with the model at that path, and a prepped recipe keeps it on every machine.",
                    "Point the prepped step at the same model's files on this machine, for example",
                    "`rec$steps[[1]]$model <- \"/srv/models/my-model\"`; bake() checks they hold the same model.")
  }
  device <- object$options$device
  if (is.null(advice) && is.character(device) && length(device) == 1L &&
      startsWith(conditionMessage(error), sprintf("device = \"%s\" was asked for", device))) {
    advice <- paste("This step was prepped with that device in `options`, and a prepped recipe keeps it on every",
                    "machine. Set one for this machine in the prepped step, for example",
                    "`rec$steps[[1]]$options$device <- \"auto\"`.")
  }
  if (is.null(advice)) {
    stop(error)
  }
  abort_bf(c(conditionMessage(error), i = advice), "python", python_type = error$python_type, call = call)
}

# a path from the root or home (/srv/m, ~/m, C:/m, a Windows share): it names the same place from any directory
ABSOLUTE_PATH <- "^(/|~|[A-Za-z]:[/\\\\]|\\\\\\\\)"

# The directory a relative `model` path names from here (absolute), or NULL for a model name or an absolute path.
relative_model_dir <- function(model) {
  if (!is.character(model) || length(model) != 1L || identical(model, "default") ||
      grepl(ABSOLUTE_PATH, model) || !dir.exists(model)) {
    return(NULL)
  }
  normalizePath(model)
}

unname_rows <- function(m) {
  rownames(m) <- NULL
  m
}

#' @export
print.step_bert_embed <- function(x, width = max(20, options()$width - 30), ...) {
  title <- sprintf("BERT embeddings (%s, %s pooling) of ", x$model, paste(x$pooling, collapse = "+"))
  recipes::print_step(x$columns, x$terms, x$trained, title, width)
  invisible(x)
}

#' @rdname step_bert_embed
#' @usage NULL
#' @export
tidy.step_bert_embed <- function(x, ...) {
  terms <- if (recipes::is_trained(x)) unname(x$columns %||% character()) else recipes::sel2char(x$terms)
  tibble::tibble(
    terms = terms,
    model = x$model,
    pooling = paste(x$pooling, collapse = "+"),
    layers = tidy_layers(x),
    n_features = if (recipes::is_trained(x)) length(x$features) %/% max(1L, length(x$columns)) else NA_integer_,
    id = x$id
  )
}

# The layers as given until prep() reads the model (NULL is the default: docs/defaults.md), then the layers read
tidy_layers <- function(x) {
  if (length(x$layers_used)) {
    return(paste(x$layers_used, collapse = ","))
  }
  if (is.null(x$layers)) "default (the last 4, or all of a model with fewer)" else paste(x$layers, collapse = ",")
}

#' @rdname step_bert_embed
#' @usage NULL
#' @export
required_pkgs.step_bert_embed <- function(x, ...) {
  "bertfeat"
}
