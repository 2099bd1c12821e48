#' Embed texts with a frozen BERT-family model
#'
#' Turns a character vector, or the text columns of a data frame, into a numeric matrix of embedding features,
#' in one call to the Python `bertfeat.BertEmbedder` (never one call per text). Repeated texts are embedded once,
#' texts are batched by length, and with `cache_dir` the vectors are shared with earlier runs, the recipes step,
#' the Python estimator and the command line.
#'
#' @param x A character vector (or factor), or a data frame whose columns are all text (character or factor).
#' @param model `"default"` is the bundled all-MiniLM-L6-v2 (no network needed). Anything else is a Hugging Face
#'   model name or a local directory holding `config.json`, the tokenizer and `model.safetensors`.
#' @param pooling `"cls"`, `"mean"` or `"max"`, or a `"+"`-joined combination such as `"cls+mean"`
#'   (the pooled vectors are concatenated in that order). The default `"cls+mean"`, with the default layers, is
#'   the choice that stayed closest to the best on two real labelled datasets
#'   (<https://github.com/bertfeat/bertfeat/blob/v0.1.0/docs/defaults.md>).
#' @param layers Hidden layers to read, as whole numbers: 0 is the embedding output, 1..L the transformer layers,
#'   negative values count from the last (`-1` is the last layer). Several layers are averaged, or concatenated
#'   with `layer_agg = "concat"`. `NULL` (the default) is the last four transformer layers (all of them on a model with fewer).
#' @param ... Other parameters of the Python `BertEmbedder`: `max_length`, `long_text` (`"truncate"` or
#'   `"chunk"`), `stride`, `normalize`, `batch_tokens`, `device`, `dtype`, `progress`, `layer_agg`,
#'   `trust_remote_code`, `cache_all_layers` (with `cache_dir`: cache every layer once, so trying other poolings
#'   and layers on the same texts never runs the model again), `prefix` (a text put before every text, such as
#'   `"query: "` for E5 models; its tokens count toward `max_length`) or `prompt_name` (a prompt from the model's
#'   sentence-transformers config, used as the prefix); and `columns`, the data frame columns to embed
#'   (default: all).
#' @param missing What a missing text gets: `"error"` (the default: an error naming the row), `"zero"` (a row of
#'   zeros) or `"nan"` (a row of `NaN`). Missing are `NA` and blank texts: `""` and texts of only whitespace,
#'   control or invisible format characters (zero-width space, BOM), private-use or replacement characters (U+FFFD, left
#'   by bytes that could not be decoded) and combining marks with no letter (a lone accent), the same rule as in
#'   Python and the command line. The string `"NA"` is text, never missing.
#' @param cache_dir Directory of the persistent embedding cache, or `NULL` for none.
#'
#' @return A numeric matrix with one row per text and one column per feature. Column names are the Python
#'   feature names, `{column}_{pooling}_{index}` with a zero-padded index (`text_cls_000` for a character
#'   vector); row names come from `names(x)`, or from the data frame's row names when they are not `1..n`.
#'
#' @seealso [step_bert_embed()] for the recipes step, [bf_embed_file()] for files, [bf_config()] for the setup.
#' @examples
#' \dontrun{
#' X <- bf_embed(c(a = "A cat sat on the mat.", b = "Stocks fell sharply."))
#' dim(X) # 2 x 768: CLS and mean pooling, each 384 wide
#' X[, 1:3]
#'
#' # several text columns, side by side
#' reviews <- data.frame(title = c("Great", "Meh"), body = c("Loved it.", NA))
#' X <- bf_embed(reviews, pooling = "cls+mean", missing = "zero")
#' }
#' @export
bf_embed <- function(x, model = "default", pooling = "cls+mean", layers = NULL, ..., missing = "error",
                     cache_dir = NULL) {
  leave_rng_as_found()
  embed_request(x, model = model, pooling = pooling, layers = layers, ..., missing = missing,
                cache_dir = cache_dir)$matrix
}

# The whole request: the matrix plus what the step and the tests need (fingerprint, stats).
embed_request <- function(x, model = "default", pooling = "cls+mean", layers = NULL, ..., missing = "error",
                          cache_dir = NULL, where = "`x`", call = rlang::caller_env()) {
  dots <- list(...)
  columns <- dots$columns
  dots$columns <- NULL
  params <- embedder_params(model, pooling, layers, missing, cache_dir, dots, call = call)
  input <- text_input(x, columns, where = where, call = call)
  masks <- lapply(input$columns, function(v) is.na(v) | is_blank(v))
  if (params$missing == "error") {
    check_no_missing(masks, input, call = call)
  }
  # texts under the mask become "" here and None in Python: an NA is never sent as the string "NA"
  texts <- Map(function(v, m) {
    v[m] <- ""
    v
  }, input$columns, masks)
  module <- python_module(call = call)
  res <- with_python_errors(module$embed(texts, masks, input$names, params), call = call)
  issue_python_warnings(res[[7]])
  matrix <- payload_matrix(res[[1]], res[[2]], res[[3]])
  dimnames(matrix) <- list(input$row_names, unlist(res[[4]]))
  list(matrix = matrix, feature_names = unlist(res[[4]]), fingerprint = res[[5]], stats = res[[6]])
}

# One copy across the bridge: Python sends column-major little-endian float32 bytes as a bytearray, which every
# reticulate turns into an R raw vector (numpy arrays do not convert under reticulate 1.28 with numpy 2).
payload_matrix <- function(buffer, nrow, ncol) {
  if (!is.raw(buffer) || length(buffer) != 4 * nrow * ncol) {
    abort_bf(
      sprintf("The Python side sent %s where %d x %d float32 values (%d bytes) were expected; is the bertfeat Python package the version this R package was built for?",
              if (is.raw(buffer)) paste(length(buffer), "bytes") else class(buffer)[1], nrow, ncol,
              4L * nrow * ncol),
      "python"
    )
  }
  values <- readBin(buffer, what = "double", n = nrow * ncol, size = 4L, endian = "little")
  matrix(values, nrow = nrow, ncol = ncol)
}

# R names of the Python BertEmbedder parameters that `...` may carry (in its documented order), by kind of value.
DOTS_PARAMS <- c("max_length", "long_text", "stride", "normalize", "batch_tokens", "device", "dtype", "progress",
                 "layer_agg", "trust_remote_code", "cache_all_layers", "prefix", "prompt_name")
INTEGER_PARAMS <- c("max_length", "stride", "batch_tokens")
FLAG_PARAMS <- c("normalize", "progress", "trust_remote_code", "cache_all_layers")
# Those of a few choices, Python's own (bertfeat.recipe; a test holds them equal): checked here, so a wrong one is
# an argument error in R's words, and the step refuses it where it is written rather than at prep()
CHOICE_PARAMS <- list(long_text = c("truncate", "chunk"), dtype = c("auto", "float32", "bfloat16", "float16"),
                      layer_agg = c("mean", "concat"))

# `dots` come from bf_embed()'s `...`, or from the step's `options` (`step = TRUE`), whose messages say so.
embedder_params <- function(model, pooling, layers, missing, cache_dir, dots, step = FALSE,
                            call = rlang::caller_env()) {
  if (length(dots) && (is.null(names(dots)) || any(!nzchar(names(dots))))) {
    abort_bf("Arguments in `...` must be named, for example `max_length = 128`.", "argument", call = call)
  }
  unknown <- setdiff(names(dots), DOTS_PARAMS)
  if (length(unknown)) {
    own <- intersect(unknown, c("model", "pooling", "layers", "missing", "cache_dir"))
    abort_bf(
      c(sprintf("Unknown argument%s %s%s.", if (length(unknown) > 1L) "s" else "",
                paste0("`", unknown, "`", collapse = ", "), if (step) " in `options`" else ""),
        i = if (step && length(own)) {
          sprintf("Pass %s to step_bert_embed() itself, not in `options`.", paste0("`", own, "`", collapse = ", "))
        },
        i = paste0(if (step) "`options`" else "`...`", " takes these BertEmbedder parameters: ",
                   paste(DOTS_PARAMS, collapse = ", "), if (step) "." else "; and `columns` for a data frame.")),
      "argument", call = call
    )
  }
  params <- list(
    model = check_string(model, "model", call = call),
    # one "+"-joined string: a vector may itself hold joined ones, c("cls+mean", "max"), which Python refuses
    pooling = paste(check_pooling(pooling, call = call), collapse = "+"),
    layers = if (!is.null(layers)) check_whole(layers, "layers", call = call),
    missing = check_choice(missing, "missing", c("error", "zero", "nan"), call = call),
    cache_dir = if (!is.null(cache_dir)) path.expand(check_string(cache_dir, "cache_dir", call = call))
  )
  for (name in names(dots)) {
    value <- dots[[name]]
    if (is.null(value)) {
      next
    }
    params[[name]] <- if (name %in% INTEGER_PARAMS) {
      check_whole(value, name, max_length = 1L, call = call)
    } else if (name %in% FLAG_PARAMS) {
      check_flag(value, name, call = call)
    } else if (name %in% names(CHOICE_PARAMS)) {
      check_choice(check_string(value, name, call = call), name, CHOICE_PARAMS[[name]], call = call)
    } else {
      check_string(value, name, call = call)
    }
  }
  params[!vapply(params, is.null, logical(1))]
}

# x -> list(columns = list of character vectors, names = column names or NULL, row_names = NULL or character).
# `where` names a data frame in messages (the step's bake() says "the data given to bake()").
text_input <- function(x, columns = NULL, where = "`x`", call = rlang::caller_env()) {
  if (is.data.frame(x)) {
    return(frame_input(x, columns, where, call = call))
  }
  if (!is.null(columns)) {
    abort_bf(
      sprintf("`columns` selects data frame columns, but `x` is %s; pass a data frame, or drop `columns`.",
              describe_class(x)),
      "argument", call = call
    )
  }
  if (is.matrix(x) || !(is.character(x) || is.factor(x))) {
    abort_bf(
      c(
        sprintf("`x` must be a character vector or a data frame of text columns, not %s.", describe_class(x)),
        # a matrix of texts (stringr::str_match(), str_split_fixed()): its columns; a list (jsonlite, purrr): one text
        # per element, NA where it holds none (unlist() would drop a NULL and move every row after it)
        i = if (is.matrix(x) && (is.character(x) || is.factor(x))) {
          "Pass as.data.frame(x) to embed its columns side by side, or x[, j] for one of them."
        } else if (is.list(x) && !is.object(x)) {
          paste("Make it a character vector with one text per element and NA where one has none, for example",
                "vapply(x, function(v) if (length(v) == 1L) as.character(v) else NA_character_, \"\").")
        } else if (is.numeric(x) || is.logical(x)) {
          "Convert with as.character() if the values are labels."
        }
      ),
      "input", call = call
    )
  }
  if (length(x) == 0L) {
    abort_bf("`x` has no texts to embed: pass at least one.", "input", call = call)
  }
  values <- utf8_texts(x, "`x`", names(x), call = call)
  list(columns = list(values), names = NULL, row_names = names(x))
}

frame_input <- function(x, columns, where, call) {
  if (!is.null(columns)) {
    if (!is.character(columns) || !length(columns) || anyNA(columns)) {
      abort_bf(sprintf("`columns` must be a character vector of column names, not %s.", show_value(columns)),
               "argument", call = call)
    }
    # data.frame's `[` would name the second copy `a.1`, a column x does not have, and embed it again
    twice <- unique(columns[duplicated(columns)])
    if (length(twice)) {
      abort_bf(sprintf("`columns` names %s more than once; name each column once.",
                       paste0("`", twice, "`", collapse = ", ")),
               "argument", call = call)
    }
    absent <- setdiff(columns, names(x))
    if (length(absent)) {
      abort_missing_columns(absent, names(x), where, call = call)
    }
    # `[` takes the first of the columns a name is shared by and leaves the others out, silently
    shared <- columns[columns %in% names(x)[duplicated(names(x))]]
    if (length(shared)) {
      at <- which(names(x) == shared[1])
      abort_bf(
        c(sprintf("Column `%s` of %s is the name of %d columns (%s): which one to embed is unclear.", shared[1], where,
                  length(at), paste(at, collapse = ", ")),
          i = "Give each column a unique name, for example with names(x) <- make.unique(names(x))."),
        "input", call = call
      )
    }
    x <- x[columns]
  }
  if (ncol(x) == 0L || nrow(x) == 0L) {
    abort_bf(sprintf("%s has %d rows and %d columns: there are no texts to embed.", where, nrow(x), ncol(x)), "input",
             call = call)
  }
  col_names <- names(x)
  if (anyNA(col_names) || any(!nzchar(col_names)) || anyDuplicated(col_names)) {
    abort_bf(
      c(sprintf("The columns of %s need unique, non-empty names: they name the features. %s.", where,
                unnamed_columns(col_names)),
        i = "Name each column once, for example with names(x) <- make.names(names(x), unique = TRUE)."),
      "input", call = call
    )
  }
  col_names <- utf8_names(col_names, where, call = call)
  row_names <- row.names(x)
  if (identical(row_names, as.character(seq_len(nrow(x))))) {
    row_names <- NULL
  }
  # by position: `[[` cannot look up a name marked "bytes"
  values <- lapply(seq_along(col_names), function(j) {
    name <- col_names[j]
    v <- check_text_column(x[[j]], name, where, call = call)
    utf8_texts(v, sprintf("column `%s`", name), row_names, call = call)
  })
  list(columns = values, names = col_names, row_names = row_names)
}

# Which columns have no name, and which share one (the first such name): "Column 1 has no name; columns 2, 3 are
# named `b`", so that a wide frame's culprits need no search.
unnamed_columns <- function(col_names) {
  blank <- is.na(col_names) | !nzchar(col_names)
  empty <- which(blank)
  named <- col_names[!blank]
  twice <- unique(named[duplicated(named)])
  plural <- function(at) if (length(at) > 1L) "columns" else "column"
  parts <- c(
    if (length(empty)) sprintf("%s %s %s no name", plural(empty), paste(empty, collapse = ", "),
                               if (length(empty) > 1L) "have" else "has"),
    if (length(twice)) {
      at <- which(col_names == twice[1])
      sprintf("columns %s are named `%s`", paste(at, collapse = ", "), twice[1])
    }
  )
  parts <- paste(parts, collapse = "; ")
  paste0(toupper(substr(parts, 1L, 1L)), substring(parts, 2L))
}

check_text_column <- function(v, name, where, call) {
  if (is.data.frame(v)) { # a packed column (tibble(d = tibble(...)))
    abort_bf(
      c(sprintf("Column `%s` of %s is a data frame of %d columns, not one text per row.", name, where, ncol(v)),
        i = "Make each of its columns a column of the data frame, for example with tidyr::unpack()."),
      "input", call = call
    )
  }
  if (length(dim(v)) == 1L && is.atomic(v)) { # a 1-d array (tapply(), table(), array()): one value per row
    v <- if (is.factor(v)) factor(as.vector(v), levels = levels(v)) else as.vector(v)
  }
  if (!is.null(dim(v))) { # a matrix column (df$m <- matrix(...)): as.character() would spread it over more rows
    abort_bf(
      c(sprintf("Column `%s` of %s is a %s matrix, not one text per row.", name, where,
                paste(dim(v), collapse = " x ")),
        i = "Make each of its columns a column of the data frame, for example with cbind(df[-j], as.data.frame(m))."),
      "input", call = call
    )
  }
  # as.character() would turn a NULL element (a missing value) into the text "NULL"; a POSIXlt is a list of its fields
  # underneath, a time, refused below as a POSIXct is
  if (is.list(v) && !inherits(v, "POSIXlt")) {
    abort_bf(
      c(sprintf("Column `%s` of %s is a list, not text.", name, where),
        i = sprintf("Make it a character column with one text per row and NA where a row has none, for example with vapply(x[[\"%s\"]], function(v) if (length(v) == 1L) as.character(v) else NA_character_, \"\").",
                    name)),
      "input", call = call
    )
  }
  # an all-NA column reads as logical (read.csv does that); it holds no text, only missing values
  if (is.logical(v) && all(is.na(v))) {
    return(as.character(v))
  }
  if (!(is.character(v) || is.factor(v))) {
    abort_bf(
      c(sprintf("Column `%s` of %s is %s, not text.", name, where, describe_class(v)),
        i = "Embed text columns only, or convert with as.character() if the values are labels."),
      "input", call = call
    )
  }
  v
}

utf8_texts <- function(v, what, row_names, call) {
  res <- as_utf8(v)
  if (length(res$bad)) {
    abort_bf(
      c(sprintf("%s of %s is not valid UTF-8, so it cannot be tokenized.", row_label(res$bad[1], row_names), what),
        i = encoding_advice("x")),
      "input", call = call
    )
  }
  res$values
}

# The column names of a data frame name its features: the same reading as its texts.
utf8_names <- function(col_names, what, call) {
  res <- as_utf8(col_names)
  if (length(res$bad)) {
    j <- res$bad[1]
    abort_bf(
      c(sprintf("Column name %d of %s (%s) is not valid UTF-8, so it cannot name the features.", j, what,
                encodeString(col_names[j], quote = "\"")),
        i = encoding_advice("names(x)", assign = TRUE)),
      "input", call = call
    )
  }
  res$values
}

# v as UTF-8 strings, and which of them are not valid UTF-8 (indices into v).
as_utf8 <- function(v) {
  v <- as.character(v)
  enc <- Encoding(v)
  # Checked before enc2utf8(), which in a UTF-8 session turns an invalid byte of an unmarked string into the four
  # characters "<e9>" (read.csv() of a latin-1 file gives such strings), and leaves "bytes" strings as they are.
  # In an ASCII session (a C or POSIX locale: Rscript from cron, a batch job, a container with LANG=C) enc2utf8()
  # does the same to every byte past ASCII, and readLines() and read.csv() of a UTF-8 file give such strings: there an
  # unmarked string is read as UTF-8, the encoding the file was written in, and refused where it is not.
  as_bytes <- enc == "bytes" | (enc == "unknown" & ascii_session() & !is.na(v) & grepl("[^\x01-\x7f]", v,
                                                                                           useBytes = TRUE))
  raw_bad <- !is.na(v) & (as_bytes | (enc == "unknown" & isTRUE(l10n_info()[["UTF-8"]]))) & !validUTF8(v)
  # R reads a string marked latin1 as Windows-1252 (curly quotes, euro sign), but writes each byte Windows-1252 leaves
  # undefined (0x81, 0x8d, 0x8f, 0x90, 0x9d) as the four characters "<81>", embedded as text: read each as Latin-1's
  # control character, as the WHATWG's windows-1252 (a browser's "latin1") reads it
  latin <- which(enc == "latin1")
  undefined <- latin[vapply(v[latin], function(s) any(charToRaw(s) %in% as.raw(CP1252_UNDEFINED)), logical(1))]
  v[undefined] <- vapply(v[undefined], windows_1252, "")
  bytes <- which(as_bytes & !raw_bad)
  if (length(bytes)) { # valid UTF-8 marked as bytes: read as UTF-8 (reticulate refuses "bytes" strings)
    b <- v[bytes]
    Encoding(b) <- "UTF-8"
    v[bytes] <- b
  }
  v <- enc2utf8(v)
  list(values = v, bad = which(raw_bad | (!is.na(v) & !validUTF8(v))))
}

# The code points of the bytes 0x80-0x9f in Windows-1252, where it has none those of Latin-1 (CP1252_UNDEFINED).
CP1252_C1 <- c(0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152,
               0x8D, 0x017D, 0x8F, 0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161,
               0x203A, 0x0153, 0x9D, 0x017E, 0x0178)
CP1252_UNDEFINED <- c(0x81, 0x8D, 0x8F, 0x90, 0x9D)

# One string's bytes read as Windows-1252 (CP1252_C1), as a UTF-8 string.
windows_1252 <- function(s) {
  points <- as.integer(charToRaw(s))
  c1 <- points >= 0x80 & points <= 0x9f
  points[c1] <- CP1252_C1[points[c1] - 0x7f]
  intToUtf8(points)
}

# Whether this R session's native encoding is ASCII (a C or POSIX locale), where enc2utf8() cannot read a byte
# past ASCII and writes it as "<c3>". Only a codeset that names ASCII counts: Windows' R has no `codeset` in
# l10n_info() (it gives `codepage`), and a missing one counted as ASCII, so in cp1250 or cp1251 every path past ASCII
# was refused and native strings were read as UTF-8.
ascii_session <- function(info = l10n_info()) {
  codeset <- info[["codeset"]]
  !isTRUE(info[["UTF-8"]]) && !isTRUE(info[["Latin-1"]]) && !isTRUE(info[["MBCS"]]) &&
    is.character(codeset) && length(codeset) == 1L && !is.na(codeset) &&
    toupper(codeset) %in% c("ANSI_X3.4-1968", "ASCII", "US-ASCII")
}

# The rule of the Python side (bertfeat.inputs.is_blank): a text with no character outside Unicode separators,
# control, format (zero-width space, BOM) and private-use characters, combining marks and U+FFFD is blank, and
# blank texts count as missing, as NA does.
is_blank <- function(v) {
  # a search for one character outside them, not a match of the whole text against them: `^[...]*$` backtracks over
  # a long run of whitespace before a letter, and past PCRE's match limit (10 MB of it) it warned "PCRE error 'match
  # limit exceeded'" and answered by chance
  !is.na(v) & !grepl("[^\\p{Z}\\p{Cc}\\p{Cf}\\p{Co}\\p{M}\ufffd]", v, perl = TRUE)
}

# A blank text as an error shows it: each character but a space as R writes it in a string ("\u200b", "\t"), since
# none can be seen (encodeString() left U+00A0 or U+200B as they are, so the message read `blank (" ")`), and only
# the first 20 of a long one (a blank text of a megabyte was printed whole).
show_blank <- function(value) {
  n <- nchar(value, type = "chars")
  points <- utf8ToInt(enc2utf8(substr(value, 1L, 20L)))
  shown <- vapply(points, function(p) {
    if (p == 32L) " " else if (p == 9L) "\\t" else if (p == 10L) "\\n" else if (p == 13L) "\\r" else
      sprintf(if (p > 0xFFFF) "\\U%08x" else "\\u%04x", p)
  }, character(1))
  paste0("\"", paste(shown, collapse = ""), if (n > 20L) sprintf("...\", %d characters", n) else "\"")
}

check_no_missing <- function(masks, input, call, nan = TRUE) {
  for (j in seq_along(masks)) {
    rows <- which(masks[[j]])
    if (length(rows)) {
      what <- if (is.null(input$names)) "`x`" else sprintf("column `%s`", input$names[j])
      value <- input$columns[[j]][rows[1]]
      problem <- if (is.na(value)) "missing (NA)" else sprintf("blank (%s)", show_blank(value))
      abort_bf(
        c(sprintf("%s of %s is %s and `missing = \"error\"`.", row_label(rows[1], input$row_names), what,
                  problem),
          if (!is.na(value)) c(i = "bertfeat treats empty texts and texts of only whitespace, control, invisible or replacement characters as missing."),
          i = sprintf("%d missing in all. Pass `missing = \"zero\"` for a row of zeros, %sor fill the missing texts first.",
                      sum(vapply(masks, sum, integer(1))),
                      if (nan) "`missing = \"nan\"` for a row of NaN, " else "")),
        "missing_value", row = rows[1], call = call
      )
    }
  }
}

abort_missing_columns <- function(absent, present, where, call) {
  abort_bf(
    c(sprintf("Column%s %s %s not in %s.", if (length(absent) > 1L) "s" else "",
              paste0("`", absent, "`", collapse = ", "), if (length(absent) > 1L) "are" else "is", where),
      i = sprintf("It has: %s.", paste0("`", utils::head(present, 20L), "`", collapse = ", ")),
      i = unicode_form_hint(absent, present)),
    "missing_column", columns = absent, call = call
  )
}

# Where a name asked for is a column's name in another Unicode form ("texte_\u00e9" typed, "texte_e\u0301" from a
# macOS export), which print alike, or with an invisible character more or less (a byte order mark read.csv() leaves
# in a first name read without fileEncoding = "UTF-8-BOM"): why, and the name to pass. R has no Unicode normalization
# of its own, so Python tells; asked only where a name past ASCII is in play, and any failure there leaves the hint
# out (NULL).
unicode_form_hint <- function(absent, present) {
  if (!any(grepl("[^\x01-\x7f]", c(absent, present), perl = TRUE))) {
    return(NULL)
  }
  hint <- tryCatch(python_module()$column_form_hint(as.list(enc2utf8(absent)), as.list(enc2utf8(present))),
                   error = function(e) "")
  if (nzchar(hint)) hint else NULL
}

row_label <- function(i, row_names) {
  if (is.null(row_names) || is.na(row_names[i]) || !nzchar(row_names[i])) {
    sprintf("Row %d", i)
  } else {
    sprintf("Row %d (\"%s\")", i, row_names[i])
  }
}

describe_class <- function(x) {
  if (is.null(x)) {
    "NULL"
  } else if (is.matrix(x)) {
    paste("a", typeof(x), "matrix")
  } else if (is.object(x)) {
    paste("a", class(x)[1], "object")
  } else if (is.list(x)) {
    "a list"
  } else {
    type <- if (is.double(x)) "numeric" else typeof(x)
    paste(if (grepl("^[aeiou]", type)) "an" else "a", type, "vector")
  }
}

# `warnings`: the (category name, message) pairs the Python side recorded (bertfeat._r._recording), each with the
# class of its Python category where R users may want one apart (muffle a model's note, keep truncation's)
PYTHON_WARNING_CLASSES <- c(TruncationWarning = "bertfeat_warning_truncation",
                            ModelNoteWarning = "bertfeat_warning_model_note")

issue_python_warnings <- function(warnings) {
  for (w in warnings) {
    class <- if (w[[1]] %in% names(PYTHON_WARNING_CLASSES)) PYTHON_WARNING_CLASSES[[w[[1]]]] else character()
    rlang::warn(w[[2]], class = c(class, "bertfeat_warning"))
  }
}

#' Embed a text column of a file with the bertfeat command line
#'
#' Runs `python -m bertfeat embed` through the same Python that [bf_embed()] uses, reading a CSV or parquet
#' file in streaming batches and writing a parquet file with the features (named as in [bf_embed()]) and its
#' provenance. Use it for files larger than memory; for data already in R, use [bf_embed()].
#'
#' @param input Path of the CSV or parquet file to read, a folder of parquet files, or a glob of them
#'   (`"data/*.parquet"`), as the command line takes it.
#' @param output Path of the parquet file to write.
#' @param text_col Name of the text column in `input`.
#' @param model,pooling,cache_dir As in [bf_embed()].
#' @param overwrite Replace `output` if it exists.
#' @param ... Further options of `bertfeat embed`, as `name = value`: `max_length = 256` becomes
#'   `--max-length=256`; `TRUE` passes a bare flag and `FALSE` or `NULL` passes nothing. `keep_col` takes a
#'   character vector, the columns copied into the output (`keep_col = c("id", "label")`); `id_col` one column.
#'   A CSV's kept columns are copied as their text unless `infer_types = TRUE` (numbers, booleans and dates as such).
#'   `layers` takes whole numbers as in [bf_embed()] (`layers = c(-1, -2)`), or the command line's string `"-1,-2"`.
#'   A CSV's reading options too: `delimiter = ";"`, and `quoting = "backslash"` for a database's text export
#'   (PostgreSQL's `\copy ... TO`, MySQL's `INTO OUTFILE` and `mysql --batch`: backslash escapes, `\N` missing) or
#'   `quoting = "none"` for a TSV that quotes nothing, `quoting = "csv-backslash"` for MySQL's
#'   `INTO OUTFILE ... ENCLOSED BY '"'` (quoted values, backslash escapes) and for pandas' `to_csv()` and Python's
#'   csv module with an escapechar.
#'
#' @return `output`, invisibly. The command's summary of the finished job (rows, dims, texts embedded and from
#'   the cache, truncated (or, with `long_text = "chunk"`, chunked) and missing texts) comes as a message of class
#'   `bertfeat_message_summary` ([suppressMessages()] hides it); progress comes as it goes, as messages of class
#'   `bertfeat_message_progress` (a line every 10 seconds). The command's warnings (a cache shard it cannot read, a
#'   model's note) are R warnings, of the classes [bf_embed()] gives them. A non-zero exit of
#'   the command is an error of class `bertfeat_error_cli` whose `stderr` field holds what the command printed
#'   there.
#' @examples
#' \dontrun{
#' bf_embed_file("reviews.csv", "reviews-features.parquet", text_col = "review")
#' }
#' @export
bf_embed_file <- function(input, output, text_col, model = "default", pooling = "cls+mean", cache_dir = NULL,
                          overwrite = FALSE, ...) {
  leave_rng_as_found()
  input <- check_string(input, "input")
  output <- check_string(output, "output")
  text_col <- check_string(text_col, "text_col")
  model <- check_string(model, "model")
  check_pooling(pooling)
  cache_dir <- check_string(cache_dir, "cache_dir", null_ok = TRUE)
  check_flag(overwrite, "overwrite")
  check_nameable(input, "input")
  check_nameable(output, "output")
  if (!is.null(cache_dir)) check_nameable(cache_dir, "cache_dir")
  # a folder of parquet files, or a glob of files, matched as the command line matches it (Sys.glob() has no `**`)
  if (!file.exists(input) && !python_module()$input_found(path.expand(input))) {
    abort_bf(sprintf("`input` \"%s\" does not exist, and matches no file as a glob.", input), "file")
  }
  # paths as ./-x.csv and values as --name=value: the command line reads a word starting with "-" as an option
  args <- c(
    "embed", dash_safe(input), paste0("--text-col=", text_col), paste0("--out=", dash_safe(output)),
    paste0("--model=", model), paste0("--pooling=", paste(pooling, collapse = "+")),
    if (!is.null(cache_dir)) paste0("--cache-dir=", path.expand(cache_dir)),
    if (overwrite) "--overwrite",
    cli_options(list(...))
  )
  run_cli(python_module(), args) # the same Python as bf_embed(), with the same error when it is missing
  invisible(output)
}

# In an ASCII session (a C locale) neither R (file.exists() warns "unable to translate ... to native encoding") nor
# the Python it runs can name a file past ASCII: "does not exist" was said of a file that exists.
check_nameable <- function(path, arg, call = rlang::caller_env()) {
  # single backslashes: R reads "\x01" as the byte, and TRE reads "\\x01" in brackets as the characters "\", "x",
  # "0", "1", so the class matched every path, and in a C locale "data.csv" was refused as past ASCII
  if (ascii_session() && grepl("[^\x01-\x7f]", path, useBytes = TRUE)) {
    abort_bf(
      c(sprintf(paste("`%s` \"%s\" has a name past ASCII, and this R session's locale (%s) has an ASCII character",
                      "set, in which R and Python cannot name that file."),
                arg, encodeString(path), Sys.getlocale("LC_CTYPE")),
        i = "Start R in a UTF-8 locale (LANG=C.UTF-8 Rscript ...), or choose an ASCII path."),
      "file", call = call
    )
  }
}

# a path as the command line reads it as a file: expanded, and "./"-prefixed where it starts with "-"
dash_safe <- function(path) {
  path <- path.expand(path)
  if (startsWith(path, "-")) paste0("./", path) else path
}

# the options `bertfeat embed` takes once per value (--keep-col id --keep-col label): a vector gives each
REPEATED_OPTIONS <- "keep_col"

cli_options <- function(options, call = rlang::caller_env()) {
  if (length(options) && (is.null(names(options)) || any(!nzchar(names(options))))) {
    abort_bf("Options in `...` must be named, for example `max_length = 256`.", "argument", call = call)
  }
  unlist(lapply(names(options), function(name) {
    value <- options[[name]]
    flag <- paste0("--", gsub("_", "-", name, fixed = TRUE))
    if (name == "layers" && !is.null(value) && !is.character(value)) {
      # as bf_embed() takes them (c(-1, -2)), with its checks, in the command line's syntax ("-1,-2")
      value <- paste(check_whole(value, "layers", call = call), collapse = ",")
    }
    if (is.null(value) || identical(value, FALSE)) {
      return(NULL)
    }
    if (identical(value, TRUE)) {
      return(flag)
    }
    if (is.character(value)) { # read as bf_embed() reads its strings: "caf\xe9" went as the text "caf<e9>"
      value <- utf8_option(value, name, call = call)
    }
    if (name %in% REPEATED_OPTIONS && is.character(value) && length(value) && !anyNA(value)) {
      return(paste0(flag, "=", value)) # the command line takes the flag once per value
    }
    if (length(value) != 1L || is.na(value)) {
      abort_bf(
        sprintf("`%s` must be a single value, not %s; write several values in the command line's own syntax as one string.",
                name, show_value(value)),
        "argument", call = call
      )
    }
    # --name=value, so that values starting with "-" (negative layers) are not read as options
    paste0(flag, "=", format(value, scientific = FALSE, trim = TRUE))
  }))
}

# The command line runs inside this R session's Python (bertfeat._r.run_cli), not as a child process: R's
# LD_LIBRARY_PATH puts Debian's libpython first, which breaks a child Python built elsewhere.
run_cli <- function(module, args, call = rlang::caller_env()) {
  # each line the command writes on stderr (progress) as an R message as it comes: RStudio and knitr show it,
  # suppressMessages() silences it; on the process's stderr they never saw it. Its error and usage lines are left
  # to the error below, which shows them.
  progress <- function(line) {
    if (!grepl("^(bertfeat[a-z ]*: error: |usage: )", line)) {
      rlang::inform(line, class = "bertfeat_message_progress")
    }
  }
  res <- with_python_errors(module$run_cli(as.list(args), on_line = progress), call = call)
  # the command's warnings as bf_embed() gives them, R warnings of their classes (a failed job's too, before its
  # error): written on stderr, they came as progress messages, which suppressMessages() hid with the progress
  issue_python_warnings(res[[5]])
  status <- res[[1]]
  split_lines <- function(text) if (nzchar(text)) strsplit(text, "\n", fixed = TRUE)[[1]] else character()
  stderr <- split_lines(res[[3]])
  if (!identical(as.integer(status), 0L)) {
    # its error lines come in R's syntax (bertfeat._r.run_cli): the options as the R user passed them
    shown <- utils::tail(stderr[nzchar(trimws(stderr))], 8L)
    abort_bf(
      c(sprintf("`bertfeat embed` failed (exit status %s).", status),
        stats::setNames(if (length(shown)) shown else "(nothing on stderr)", rep(" ", max(1L, length(shown)))),
        # as a shell runs it: install_bertfeat()'s virtualenv is on no PATH, so `bertfeat` alone was not found
        i = sprintf("Command: %s -m bertfeat %s", shQuote(reticulate::py_exe()), paste(shQuote(args), collapse = " "))),
      "cli", status = status, stderr = paste(stderr, collapse = "\n"), call = call
    )
  }
  # the summary of the finished job ("wrote ... rows x ... dims ..."), as an R message: suppressMessages() and
  # knitr see it, where the process's stderr (progress, which stays there) is out of their reach
  if (nzchar(res[[4]])) {
    rlang::inform(res[[4]], class = "bertfeat_message_summary")
  }
  invisible(status)
}
