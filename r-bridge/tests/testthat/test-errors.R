test_that("bad arguments are classed errors with messages that say what to pass", {
  expect_error(bf_embed("a", pooling = "avg"), class = "bertfeat_error_argument")
  expect_error(bf_embed("a", pooling = "mean+mean"), class = "bertfeat_error_argument")
  expect_error(bf_embed("a", missing = "drop"), class = "bertfeat_error_argument")
  expect_error(bf_embed("a", layers = 1.5), class = "bertfeat_error_argument")
  expect_error(bf_embed("a", max_length = "long"), class = "bertfeat_error_argument")
  expect_error(bf_embed("a", normalize = NA), class = "bertfeat_error_argument")
  expect_error(bf_embed("a", max_lenght = 10), class = "bertfeat_error_argument")
})

test_that("argument errors read well", {
  expect_snapshot(error = TRUE, {
    bf_embed("a", pooling = "avg")
    bf_embed("a", missing = "drop")
    bf_embed("a", layers = c(-1, 0.5))
    bf_embed("a", max_lenght = 10)
    bf_embed("a", 10)
  })
})

test_that("input that is not text is a classed error", {
  expect_error(bf_embed(1:3), class = "bertfeat_error_input")
  expect_error(bf_embed(list("a", "b")), class = "bertfeat_error_input")
  expect_error(bf_embed(matrix("a", 2, 2)), class = "bertfeat_error_input")
  expect_error(bf_embed(character()), class = "bertfeat_error_input")
  expect_error(bf_embed(data.frame(t = "a", n = 1)), class = "bertfeat_error_input")
  bad <- "caf\xe9"
  Encoding(bad) <- "latin1"
  expect_identical(dim(bf_embed(bad)), c(1L, 768L)) # marked latin1: converted, not an error
  Encoding(bad) <- "bytes"
  expect_error(bf_embed(bad), class = "bertfeat_error_input")
})

test_that("input errors read well", {
  expect_snapshot(error = TRUE, {
    bf_embed(c(1.5, 2))
    bf_embed(data.frame(text = "a", n_words = 3L))
    bf_embed(character())
  })
})

test_that("a missing column is a classed error naming it", {
  df <- data.frame(title = "a", body = "b")
  err <- expect_error(bf_embed(df, columns = c("title", "review")), class = "bertfeat_error_missing_column")
  expect_identical(err$columns, "review")
})

test_that("a column named in another Unicode form is refused saying so, with the name to pass", {
  # "texte_\u00e9" typed and "texte_e\u0301" (a header from a macOS export) print alike: the refusal said only that
  # `texte_é` is not in `x`, which has `texte_é`
  nfd <- "texte_e\u0301"
  df <- data.frame(id = "1", x = "the cat sat")
  names(df)[2] <- nfd
  err <- expect_error(bf_embed(df, columns = "texte_\u00e9"), class = "bertfeat_error_missing_column")
  expect_match(conditionMessage(err), paste0("is that name in another Unicode form (code points texte_e\\u0301; ",
                                             "texte_\\u00e9 was given), which prints alike"), fixed = TRUE)
  expect_match(conditionMessage(err), "Pass the name as the data writes it (\"texte_e\\u0301\")", fixed = TRUE)
  # the advice, followed
  X <- bf_embed(df, columns = "texte_e\u0301", pooling = "mean")
  expect_identical(nrow(X), 1L)
  # a name past ASCII that is no other form of a column's gets no such hint
  err <- expect_error(bf_embed(df, columns = "caf\u00e9"), class = "bertfeat_error_missing_column")
  expect_no_match(conditionMessage(err), "Unicode form")
})

test_that("a column name holding an invisible character is refused saying so, with the name to pass", {
  # read.csv(check.names = FALSE) of an Excel "CSV UTF-8" file without fileEncoding = "UTF-8-BOM" keeps the byte
  # order mark in the first name: `review` was "not in `x`", which has `review` (the mark prints as nothing), and R
  # asked Python for a hint only where the name asked for was past ASCII
  df <- data.frame(x = "the cat sat", id = "1")
  names(df)[1] <- "\ufeffreview"
  err <- expect_error(bf_embed(df, columns = "review"), class = "bertfeat_error_missing_column")
  expect_match(conditionMessage(err), paste0("is that name with an invisible character (code points \\ufeffreview; ",
                                             "review was given), which prints alike"), fixed = TRUE)
  expect_match(conditionMessage(err), 'read.csv(..., fileEncoding = "UTF-8-BOM") leaves it out', fixed = TRUE)
})

test_that("missing-column errors read well", {
  expect_snapshot(error = TRUE, bf_embed(data.frame(title = "a", body = "b"), columns = c("title", "review")))
})

test_that("an error raised in Python keeps its message and type", {
  err <- expect_error(bf_embed("a", max_length = 2), class = "bertfeat_error_python")
  expect_identical(err$python_type, "ValueError")
  expect_match(conditionMessage(err), "max_length = 2 is not valid", fixed = TRUE)
  expect_error(bf_embed("a", model = "./no/such/model"), class = "bertfeat_error_python")
})

test_that("Python's advice reaches R users in R's syntax", {
  # it told R users to pass long_text='chunk', stride=None, task='regression' (--task regression), overwrite=True
  err <- expect_error(bf_embed("a", stride = 3), class = "bertfeat_error_python")
  expect_match(conditionMessage(err), 'pass long_text = "chunk" as well, or stride = NULL.', fixed = TRUE)
  expect_warning(bf_embed(strrep("the quick brown fox ", 20), max_length = 8),
                 'Pass long_text = "chunk" to embed them in full', fixed = TRUE, class = "bertfeat_warning_truncation")
  texts <- sprintf("review number %d", 1:20)
  err <- expect_error(bf_probe(texts, rep(c(0.5, 1.5), 10), cv = 2), class = "bertfeat_error_python")
  expect_match(conditionMessage(err), 'Pass task = "regression" to score them as numbers', fixed = TRUE)
  expect_no_match(conditionMessage(err), "--task", fixed = TRUE)
  input <- tempfile(fileext = ".csv")
  utils::write.csv(data.frame(review = "a cat"), input, row.names = FALSE)
  output <- tempfile(fileext = ".parquet")
  file.create(output)
  err <- expect_error(bf_embed_file(input, output, "review"), class = "bertfeat_error_cli")
  # in R's syntax, not the command line's "--overwrite" it runs (spelling hunt, 2026-11-27, session 13)
  expect_match(conditionMessage(err), "exists; pass overwrite = TRUE to replace it", fixed = TRUE)
  expect_no_match(conditionMessage(err), "--overwrite", fixed = TRUE)
  # choices in R's quotes, not Python's "expected 'auto', 'cpu', ..." or "one of ['truncate', 'chunk']"
  err <- expect_error(bf_embed("a", device = "gpu"), class = "bertfeat_error_python")
  expect_match(conditionMessage(err), 'device = "gpu" is not valid: expected "auto", "cpu", "cuda", "cuda:N" or "mps".',
               fixed = TRUE)
  # the layers resolved, as R writes them, not Python's "(as [6, 5, 6])" (scikit-learn and R hunt, session 16)
  err <- expect_error(bf_embed("a", layers = c(-1, -2, -1)), class = "bertfeat_error_python")
  expect_match(conditionMessage(err), "layers = c(-1, -2, -1) names the same layer twice (as c(6, 5, 6));", fixed = TRUE)
})

test_that("a message quoting one text quotes it as R does", {
  # lists of choices reached R in R's quotes, but one text alone kept Python's: "a Hugging Face model name such as
  # 'sentence-transformers/all-mpnet-base-v2'", "'/tmp/x.csv' cannot be read as parquet", "'texte_\u00e9' is that
  # name in another Unicode form"
  err <- expect_error(bf_embed("a", model = "./no/such/model"), class = "bertfeat_error_python")
  expect_match(conditionMessage(err), 'such as "sentence-transformers/all-mpnet-base-v2", or model = "default"',
               fixed = TRUE)
  input <- tempfile(fileext = ".csv")
  writeLines(c("review", "a cat"), input)
  err <- expect_error(bf_read_features(input), class = "bertfeat_error_input")
  expect_match(conditionMessage(err), sprintf('"%s" cannot be read as parquet', input), fixed = TRUE)
  df <- data.frame(x = "the cat sat")
  names(df) <- "texte_e\u0301"
  err <- expect_error(bf_embed(df, columns = "texte_\u00e9"), class = "bertfeat_error_missing_column")
  expect_match(conditionMessage(err), '"texte_e\u0301" is that name in another Unicode form', fixed = TRUE)
  # the words of a message keep their apostrophes
  err <- expect_error(bf_embed("a", max_length = 100000), class = "bertfeat_error_python")
  expect_match(conditionMessage(err), "the model's limit", fixed = TRUE)
})

test_that("text that is not UTF-8 is refused, whatever it is marked as", {
  # unmarked, as read.csv() reads a latin-1 file in a UTF-8 session: enc2utf8() turned the bad byte into the
  # four characters "<e9>", which were embedded as text
  unmarked <- c("fine", "caf\xe9 au lait")
  err <- expect_error(bf_embed(unmarked), class = "bertfeat_error_input")
  expect_match(conditionMessage(err), "Row 2 of `x` is not valid UTF-8", fixed = TRUE)
  # marked as bytes but valid UTF-8: the bytes are read as UTF-8 (it reached Python and failed there)
  valid_bytes <- "h\xc3\xa9llo"
  Encoding(valid_bytes) <- "bytes"
  expect_identical(bf_embed(valid_bytes), bf_embed(enc2utf8("h\u00e9llo")))
  df <- data.frame(t = c("ok", "caf\xe9"))
  expect_error(bf_embed(df), class = "bertfeat_error_input")
})

test_that("in a C locale, texts and names read as UTF-8 bytes are that text, not \"<c3><a9>\" escapes", {
  # Rscript from cron, a batch job or a container with LANG=C: readLines() and read.csv() of a UTF-8 file give
  # unmarked strings of UTF-8 bytes, and enc2utf8() in an ASCII locale turned each byte past ASCII into the four
  # characters "<c3>": "caf<c3><a9> au lait" was embedded, and the column "texte_<c3><a9>" named the features,
  # silently. Bytes that are not UTF-8 are refused there as in a UTF-8 session.
  want_x <- bf_embed(c("fine", "caf\u00e9 au lait"))
  want_df <- bf_embed(stats::setNames(data.frame(c("fine", "caf\u00e9 au lait")), "texte_\u00e9"))
  withr::local_locale(c(LC_CTYPE = "C"))
  utf8_bytes <- c("fine", rawToChar(as.raw(c(0x63, 0x61, 0x66, 0xc3, 0xa9, 0x20, 0x61, 0x75, 0x20, 0x6c, 0x61, 0x69,
                                             0x74))))
  expect_identical(Encoding(utf8_bytes), c("unknown", "unknown"))
  expect_identical(bf_embed(utf8_bytes), want_x)
  df <- data.frame(utf8_bytes)
  names(df) <- rawToChar(as.raw(c(0x74, 0x65, 0x78, 0x74, 0x65, 0x5f, 0xc3, 0xa9)))
  got <- bf_embed(df)
  expect_identical(colnames(got), colnames(want_df))
  expect_identical(unname(got), unname(want_df))
  err <- expect_error(bf_embed(c("fine", "caf\xe9 au lait")), class = "bertfeat_error_input")
  expect_match(conditionMessage(err), "Row 2 of `x` is not valid UTF-8", fixed = TRUE)
})

test_that("a matrix column of a data frame is refused, not spread over more rows", {
  df <- data.frame(id = 1:2)
  df$m <- matrix(c("a cat", "the dog", "mat", "sat"), nrow = 2)
  err <- expect_error(bf_embed(df, columns = "m"), class = "bertfeat_error_input")
  expect_match(conditionMessage(err), "Column `m` of `x` is a 2 x 2 matrix", fixed = TRUE)
  df2 <- data.frame(t = c("x", "y"))
  df2$m <- I(matrix(c("a", "b", "c", "d"), nrow = 2))
  expect_error(bf_embed(df2, missing = "zero"), class = "bertfeat_error_input")
})

test_that("a one-dimensional array column (tapply(), array()) is one text per row, embedded, not refused as a matrix", {
  # it was "Column `t` of `x` is a 2 matrix, not one text per row", advising cbind() with as.data.frame()
  texts <- c("a cat sat", "the dog ran")
  df <- data.frame(id = 1:2)
  df$t <- tapply(texts, c("x", "y"), identity)
  expect_identical(dim(df$t), 2L)
  expected <- bf_embed(data.frame(t = texts), pooling = "mean")
  expect_identical(bf_embed(df, columns = "t", pooling = "mean"), expected)
  expect_identical(bf_embed(tibble::tibble(t = array(texts)), pooling = "mean"), expected)
  rec <- recipes::prep(step_bert_embed(recipes::recipe(~ t, data = df[c("id", "t")]), t, pooling = "mean"))
  expect_identical(unname(as.matrix(recipes::bake(rec, new_data = df[c("id", "t")])[colnames(expected)])),
                   unname(expected))
})

test_that("whole numbers beyond R's integer range are argument errors quoting the value", {
  err <- expect_error(bf_embed("the dog", max_length = 3e9), class = "bertfeat_error_argument")
  expect_match(conditionMessage(err), "`max_length` must be a whole number, not 3e+09", fixed = TRUE)
  expect_error(bf_embed("the dog", layers = c(-1, 3e9)), class = "bertfeat_error_argument")
})

test_that("a character matrix, a list or a data frame of unnamed columns as `x` is refused saying what to pass", {
  # each was refused with no word of what to do: a character matrix (what stringr::str_match() gives) "not a
  # character matrix", a list "not a list", and unnamed or twice-named columns without saying which
  m <- matrix(c("a cat", "the dog", "sat", "ran"), nrow = 2, dimnames = list(NULL, c("subject", "verb")))
  err <- expect_error(bf_embed(m), class = "bertfeat_error_input")
  expect_match(conditionMessage(err), "Pass as.data.frame(x) to embed its columns side by side, or x[, j] for one of them.",
               fixed = TRUE)
  expect_identical(colnames(bf_embed(as.data.frame(m), pooling = "mean"))[c(1, 385)],
                   c("subject_mean_000", "verb_mean_000"))
  err <- expect_error(bf_embed(list("a cat", NULL, c("x", "y"))), class = "bertfeat_error_input")
  advice <- "vapply(x, function(v) if (length(v) == 1L) as.character(v) else NA_character_, \"\")"
  expect_match(conditionMessage(err), advice, fixed = TRUE)
  x <- list("a cat", NULL, c("x", "y"))
  expect_identical(eval(parse(text = advice)[[1]]), c("a cat", NA, NA)) # one row per element, a missing one NA
  df <- data.frame("a cat", "the dog", "sat", check.names = FALSE)
  names(df) <- c("", "b", "b")
  err <- expect_error(bf_embed(df), class = "bertfeat_error_input")
  expect_match(conditionMessage(err), "The columns of `x` need unique, non-empty names: they name the features. Column 1 has no name; columns 2, 3 are named `b`.",
               fixed = TRUE)
  expect_match(conditionMessage(err), "Name each column once, for example with names(x) <- make.names(names(x), unique = TRUE).",
               fixed = TRUE)
})

test_that("a column named twice in `columns` is refused, not embedded again under a name it does not have", {
  # data.frame's `[` renamed the copy `a.1`, so the features came back as a_... and a.1_..., silently
  df <- data.frame(a = c("a cat", "a dog"), b = c("x", "y"))
  err <- expect_error(bf_embed(df, columns = c("a", "b", "a")), class = "bertfeat_error_argument")
  expect_match(conditionMessage(err), "`columns` names `a` more than once", fixed = TRUE)
  # a tibble refused it as "The columns of `x` need unique, non-empty names"
  err <- expect_error(bf_embed(tibble::tibble(a = "a cat"), columns = c("a", "a")), class = "bertfeat_error_argument")
  expect_match(conditionMessage(err), "`columns` names `a` more than once", fixed = TRUE)
})

test_that("`columns` naming a name two columns of the data frame share is refused, not the first one embedded", {
  # data.frame's `[` took the first `a` ("x") and left the second ("y") out, silently; Python's BertEmbedder refuses
  # it ("column 'a' appears more than once")
  df <- data.frame(a = "x", a = "y", b = "z", check.names = FALSE)
  err <- expect_error(bf_embed(df, columns = c("b", "a")), class = "bertfeat_error_input")
  expect_match(conditionMessage(err), "Column `a` of `x` is the name of 2 columns (1, 2)", fixed = TRUE)
  # a name used once beside a repeated one is read as ever
  expect_identical(unname(bf_embed(df, columns = "b", pooling = "mean")), unname(bf_embed("z", pooling = "mean")))
})

test_that("the advice for text that is not UTF-8 converts Windows-1252, keeping its quotes, dashes and euro signs", {
  # it said iconv(x, from = "latin1", ...): a file Excel (or write.csv on Windows) wrote is Windows-1252, and read as
  # Latin-1 its curly quotes, dashes and euro signs became invisible C1 control characters, which the tokenizer drops,
  # silently ("\u201cGreat\u201d \u2013 \u20ac5" embedded as "Great 5"); the command line advises cp1252
  excel <- "\x93Great\x94 \x96 \x805"
  meant <- "\u201cGreat\u201d \u2013 \u20ac5"
  err <- expect_error(bf_embed(excel), class = "bertfeat_error_input")
  expect_match(conditionMessage(err), 'iconv(x, from = "CP1252", to = "UTF-8")', fixed = TRUE)
  expect_identical(iconv(excel, from = "CP1252", to = "UTF-8"), meant) # the advice, followed
  err <- expect_error(bf_embed(data.frame(t = excel)), class = "bertfeat_error_input")
  expect_match(conditionMessage(err), 'iconv(x, from = "CP1252", to = "UTF-8")', fixed = TRUE)
  err <- expect_error(bf_embed("a", prefix = excel), class = "bertfeat_error_argument")
  expect_match(conditionMessage(err), 'iconv(prefix, from = "CP1252", to = "UTF-8")', fixed = TRUE)
  df <- data.frame(x = "a cat")
  names(df) <- "caf\xe9"
  err <- expect_error(bf_embed(df), class = "bertfeat_error_input")
  expect_match(conditionMessage(err), 'names(x) <- iconv(names(x), from = "CP1252", to = "UTF-8")', fixed = TRUE)
})

test_that("a string marked latin1 with a byte Windows-1252 leaves undefined is that character, not the text \"<81>\"", {
  # R reads latin1 as Windows-1252, and wrote its five undefined bytes as the four characters "<81>", embedded so
  marked <- c("a\x81b \x93caf\xe9\x94", "fine")
  Encoding(marked) <- "latin1"
  meant <- c("a\u0081b \u201ccaf\u00e9\u201d", "fine")
  expect_identical(bf_embed(marked, pooling = "mean"), bf_embed(meant, pooling = "mean"))
  expect_identical(bertfeat:::as_utf8(marked)$values, meant)
  expect_identical(bertfeat:::as_utf8(rawToChar(as.raw(c(0x80:0x9f, 0xe9))) |> `Encoding<-`("latin1"))$values,
                   intToUtf8(c(bertfeat:::CP1252_C1, 0xe9)))
  df <- data.frame(x = "a cat")
  names(df) <- marked[1]
  expect_identical(colnames(bf_embed(df, pooling = "mean"))[1], paste0(meant[1], "_mean_000"))
})

test_that("a column name that is not UTF-8 is refused, and one marked latin1 or bytes is read as UTF-8", {
  df <- data.frame(x = c("a cat", "a dog"))
  # unmarked, as data.table::fread() or read.csv(check.names = FALSE) gives a latin-1 header in a UTF-8 session:
  # the features were named "caf<e9>_mean_000", after a column the data frame does not have
  names(df) <- "caf\xe9"
  err <- expect_error(bf_embed(df, pooling = "mean"), class = "bertfeat_error_input")
  expect_match(conditionMessage(err), "Column name 1 of `x` (\"caf\\xe9\") is not valid UTF-8", fixed = TRUE)
  latin <- "caf\xe9"
  Encoding(latin) <- "latin1"
  names(df) <- latin
  expected <- colnames(bf_embed(df, pooling = "mean"))
  expect_identical(expected[1], "caf\u00e9_mean_000")
  # marked bytes but valid UTF-8: it failed inside data.frame's `[[` ("translating strings with "bytes" encoding")
  b <- "caf\xc3\xa9"
  Encoding(b) <- "bytes"
  names(df) <- b
  expect_identical(colnames(bf_embed(df, pooling = "mean")), expected)
})

test_that("a list column is refused with advice that keeps a missing text missing", {
  # the advice was as.character(), which turns a NULL element (jsonlite's missing value) into the text "NULL"
  tb <- tibble::tibble(t = list("a cat", NULL, "a dog"))
  err <- expect_error(bf_embed(tb), class = "bertfeat_error_input")
  expect_match(conditionMessage(err), "Column `t` of `x` is a list, not text.", fixed = TRUE)
  expect_no_match(conditionMessage(err), "as.character()", fixed = TRUE)
  # the advice given works, and keeps the NULL missing
  advice <- sub(".*for example with ", "", sub("\\.$", "", conditionMessage(err)))
  tb$t <- eval(parse(text = sub("x[[\"t\"]]", "tb$t", advice, fixed = TRUE)))
  expect_identical(tb$t, c("a cat", NA, "a dog"))
  # a data frame column was called a matrix
  packed <- tibble::tibble(id = 1:2, d = tibble::tibble(a = c("x", "y"), b = c("u", "v")))
  err <- expect_error(bf_embed(packed, columns = "d"), class = "bertfeat_error_input")
  expect_match(conditionMessage(err), "Column `d` of `x` is a data frame of 2 columns, not one text per row.",
               fixed = TRUE)
  # a POSIXlt column (a list of its fields underneath) was "a list", with the vapply() advice, which runs over its
  # 11 fields, not its 2 rows: it is a time, refused as a POSIXct or Date column is
  df <- data.frame(id = 1:2)
  df$when <- as.POSIXlt(c("2026-11-27 10:00:00", "2026-11-27 11:00:00"), tz = "UTC")
  err <- expect_error(bf_embed(df, columns = "when"), class = "bertfeat_error_input")
  expect_match(conditionMessage(err), "Column `when` of `x` is a POSIXlt object, not text.", fixed = TRUE)
  expect_match(conditionMessage(err), "convert with as.character() if the values are labels", fixed = TRUE)
})

test_that("a string option that is not UTF-8 is refused, and one marked latin1 or bytes is read as UTF-8", {
  expected <- bf_embed("a cat", prefix = "caf\u00e9: ")
  # unmarked: the prefix "caf<e9>: " was put before every text, silently
  err <- expect_error(bf_embed("a cat", prefix = "caf\xe9: "), class = "bertfeat_error_argument")
  expect_match(conditionMessage(err), "`prefix` is not valid UTF-8 (\"caf\\xe9: \")", fixed = TRUE)
  latin <- "caf\xe9: "
  Encoding(latin) <- "latin1"
  expect_identical(bf_embed("a cat", prefix = latin), expected)
  # marked bytes: "translating strings with "bytes" encoding is not allowed", from inside reticulate
  b <- "caf\xc3\xa9: "
  Encoding(b) <- "bytes"
  expect_identical(bf_embed("a cat", prefix = b), expected)
  expect_error(recipes::recipe(~ t, data = data.frame(t = "a")) |> step_bert_embed(t, options = list(prefix = "\xe9")),
               class = "bertfeat_error_argument")
  expect_error(bf_embed_file("in.csv", "out\xe9.parquet", "text"), class = "bertfeat_error_argument")
})

test_that("a parameter of a few choices is refused by R, where it is written, with the choices Python takes", {
  # long_text, layer_agg and dtype were strings to R: a wrong one reached Python as an error of class
  # bertfeat_error_python, and the step took it when written and failed at prep()
  err <- expect_error(bf_embed("a", long_text = "chunky"), class = "bertfeat_error_argument")
  expect_match(conditionMessage(err), '`long_text` must be one of "truncate" or "chunk", not "chunky".', fixed = TRUE)
  expect_error(bf_embed("a", dtype = "fp16"), class = "bertfeat_error_argument")
  train <- data.frame(review = c("a", "b"), score = 1:2)
  expect_error(recipes::recipe(score ~ review, data = train) |>
                 step_bert_embed(review, options = list(layer_agg = "sum")), class = "bertfeat_error_argument")
  expect_error(bf_probe(c("a", "b"), 1:2, long_text = "chunky"), class = "bertfeat_error_argument")
  recipe <- reticulate::import("bertfeat.recipe")
  expect_identical(bertfeat:::CHOICE_PARAMS,
                   list(long_text = unlist(recipe$LONG_TEXT_MODES), dtype = unlist(recipe$DTYPES),
                        layer_agg = unlist(recipe$LAYER_AGGS)))
})
