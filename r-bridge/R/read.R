#' Read the features bf_embed_file() wrote
#'
#' Reads the parquet output of [bf_embed_file()] (the `bertfeat embed` command line: a file, or the folder of parquet
#' files of the Ray and Spark engines) into R, through the Python that [bf_embed()] uses, so no R parquet reader is
#' needed: the features as a numeric matrix for glmnet and other models, and the kept columns (`keep_col`, `id_col`)
#' as a tibble, row for row.
#'
#' @param path Path of the output: a parquet file, or a folder of parquet files.
#' @param row_names `NULL`, or the name of a kept column whose values name the rows of the matrix (each once, none
#'   missing), such as the `id_col` of the run.
#'
#' @return A list of
#'   * `x`: a numeric matrix, one row per row of the input and one column per feature, named as in [bf_embed()]
#'     (`review_cls_000`, ...); a missing text's row is `NaN` or zeros as the run's `missing` said;
#'   * `data`: a tibble of the kept columns: text as character, whole numbers as integer (as double past R's
#'     integers, as character past 2^53, which a double would change), other numbers as double, booleans as logical,
#'     dates as Date, times as POSIXct (a time without a zone in the session's, as [as.POSIXct()] reads its text),
#'     durations as difftime in seconds, anything else (decimals) as its text; missing values `NA`; a list column
#'     (tags a pandas frame wrote as lists) as a list column of such vectors (`NULL` for a missing row), a struct as
#'     a data frame column, bytes as raw vectors, as the arrow R package reads them. These are a parquet input's
#'     types: a CSV's kept columns are its text, as written, unless [bf_embed_file()] was given
#'     `infer_types = TRUE` (`007` stays `"007"`, a score `"4.5"`);
#'   * `provenance`: the run's recipe as written in the file (model, its sha256, pooling, layers, dims, ...).
#'
#'   A file written with `layout = "list"` gives the same matrix, named as the default layout names its
#'   columns. A file that is not bertfeat's output is an error of class `bertfeat_error_input`.
#' @seealso [bf_embed_file()]
#' @examples
#' \dontrun{
#' bf_embed_file("reviews.csv", "features.parquet", text_col = "review", keep_col = c("id", "label"))
#' f <- bf_read_features("features.parquet", row_names = "id")
#' fit <- glmnet::cv.glmnet(f$x, f$data$label, family = "binomial")
#' }
#' @export
bf_read_features <- function(path, row_names = NULL) {
  leave_rng_as_found()
  call <- rlang::current_env()
  path <- check_string(path, "path", call = call)
  row_names <- check_string(row_names, "row_names", null_ok = TRUE, call = call)
  check_nameable(path, "path", call = call)
  if (!file.exists(path)) {
    abort_bf(sprintf("`path` \"%s\" does not exist.", path), "file", call = call)
  }
  res <- tryCatch(
    with_python_errors(python_module(call = call)$read_features(path.expand(path)), call = call),
    # not bertfeat's output, or not parquet: the file given is the problem, not the Python side
    bertfeat_error_python = function(e) {
      if (!identical(e$python_type, "ValueError")) stop(e)
      abort_bf(conditionMessage(e), "input", call = call)
    }
  )
  x <- payload_matrix(res[[1]], res[[2]], res[[3]])
  colnames(x) <- as.character(unlist(res[[4]]))
  kept <- lapply(res[[5]], function(column) r_value(column[[2]], column[[3]]))
  names(kept) <- vapply(res[[5]], function(column) column[[1]], character(1))
  data <- tibble::as_tibble(kept, .rows = nrow(x)) # row for row, also with no kept column
  if (!is.null(row_names)) {
    if (!row_names %in% names(data)) {
      abort_missing_columns(row_names, names(data), sprintf("the kept columns of \"%s\"", path), call = call)
    }
    ids <- data[[row_names]]
    if (!is.atomic(ids)) {
      abort_bf(sprintf(paste("Column `%s` cannot name the rows: it holds %s, not one value per row; pass a column",
                             "that names each row once."), row_names, if (is.data.frame(ids)) "fields" else "lists"),
               "argument", call = call)
    }
    # as.character(3e9) is "3e+09": whole numbers past R's integers (order numbers) are named by their digits
    ids <- if (is.double(ids)) {
      vapply(ids, function(v) if (is.na(v)) NA_character_ else format(v, scientific = FALSE, digits = 15L), "")
    } else {
      as.character(ids)
    }
    if (anyNA(ids) || anyDuplicated(ids)) {
      abort_bf(sprintf("Column `%s` cannot name the rows: it has %s; pass a column that names each row once.",
                       row_names, if (anyNA(ids)) "missing values" else "repeated values"),
               "argument", call = call)
    }
    rownames(x) <- ids
  }
  list(x = x, data = data, provenance = res[[6]])
}

# A kept column from Python (bertfeat._r._r_values) as R holds it: a list column of such values (NULL for a missing
# row), a data frame column of a struct's fields, a list of raw vectors for bytes, else the vector `kind` names.
r_value <- function(kind, values) {
  switch(kind,
    list = lapply(values, function(row) if (is.null(row)) NULL else r_value(row[[1]], row[[2]])),
    raw = lapply(values, function(v) if (is.null(v)) NULL else as.raw(as.integer(unlist(v)))),
    struct = {
      fields <- lapply(values[[2]], function(field) r_value(field[[1]], field[[2]]))
      names(fields) <- as.character(unlist(values[[1]]))
      tibble::new_tibble(fields, nrow = as.integer(values[[3]]))
    },
    date = structure(r_vector("double", values), class = "Date"),
    duration = as.difftime(r_vector("double", values), units = "secs"),
    # a time without a zone is a wall clock, read in the session's zone as as.POSIXct() reads its text
    datetime = if (identical(values[[1]], "")) {
      as.POSIXct(r_vector("character", values[[2]]), tz = "", format = "%Y-%m-%d %H:%M:%OS")
    } else {
      .POSIXct(r_vector("double", values[[2]]), tz = values[[1]])
    },
    r_vector(kind, values)
  )
}

# A kept column from Python (a list, None for a missing value) as the R vector `kind` names.
r_vector <- function(kind, values) {
  template <- switch(kind, logical = NA, integer = NA_integer_, double = NA_real_, NA_character_)
  vapply(as.list(values), function(v) if (is.null(v)) template else as.vector(v, typeof(template)), template,
         USE.NAMES = FALSE)
}
