csv_with_text <- function(texts) {
  path <- tempfile("bertfeat-in-", fileext = ".csv")
  utils::write.csv(data.frame(id = seq_along(texts), review = texts), path, row.names = FALSE)
  path
}

test_that("bf_embed_file() checks its input before running anything", {
  expect_error(bf_embed_file(tempfile(), tempfile(), "review"), class = "bertfeat_error_file")
  expect_error(bf_embed_file(csv_with_text("a"), tempfile(), text_col = 1), class = "bertfeat_error_argument")
  expect_error(bf_embed_file(csv_with_text("a"), tempfile(), "review", pooling = "avg"),
               class = "bertfeat_error_argument")
  # layers as bf_embed() takes them: whole numbers (a vector is several layers), checked before anything runs
  for (layers in list(c(1, NA), c(-1, 1.5), list(-1, -2), c(TRUE, FALSE))) {
    expect_error(bf_embed_file(csv_with_text("a"), tempfile(), "review", layers = layers),
                 class = "bertfeat_error_argument")
  }
})

test_that("bf_embed_file() takes layers as a vector of whole numbers, as bf_embed() does, or as the command's string", {
  # `layers = c(-1, -2)` was refused ("must be a single value"): users had to write the command line's "-1,-2"
  input <- csv_with_text(c("a cat sat", "stocks fell"))
  read <- lapply(list(c(-1L, -2L), c(-1, -2), "-1,-2"), function(layers) {
    output <- tempfile("bertfeat-out-", fileext = ".parquet")
    suppressMessages(bf_embed_file(input, output, "review", pooling = "mean", layers = layers, layer_agg = "concat"))
    bf_read_features(output)$x
  })
  expect_identical(read[[1]], read[[3]])
  expect_identical(read[[2]], read[[3]])
  expect_identical(colnames(read[[1]])[c(1, 385)], c("review_mean_l6_000", "review_mean_l5_000"))
  expect_equal(unname(read[[1]]), unname(bf_embed(c("a cat sat", "stocks fell"), pooling = "mean",
                                                  layers = c(-1, -2), layer_agg = "concat")), tolerance = 1e-6)
})

test_that("in a C locale a path past ASCII is refused for the locale, not said not to exist", {
  # R's file.exists() cannot translate "caf\u00e9.csv" to an ASCII native encoding (nor can the Python it runs):
  # bf_embed_file() said "`input` ... does not exist" of a file that exists
  dir <- withr::local_tempdir()
  input <- file.path(dir, "caf\u00e9.csv")
  utils::write.csv(data.frame(review = "a cat"), input, row.names = FALSE)
  # an input that passes (ASCII, and there), so that the second call is refused for its output's name
  utils::write.csv(data.frame(review = "a cat"), file.path(dir, "x.csv"), row.names = FALSE)
  withr::local_locale(c(LC_CTYPE = "C"))
  for (call in list(function() bf_embed_file(input, file.path(dir, "f.parquet"), "review"),
                    function() bf_embed_file(file.path(dir, "x.csv"), file.path(dir, "caf\u00e9.parquet"), "review"))) {
    err <- expect_error(call(), class = "bertfeat_error_file")
    expect_match(conditionMessage(err), "has a name past ASCII", fixed = TRUE)
    expect_match(conditionMessage(err), "LANG=C.UTF-8", fixed = TRUE)
  }
})

test_that("in a C locale ASCII input and output paths run", {
  # check_nameable()'s "[^\\x01-\\x7f]" was read by TRE as a class of the characters "\", "x", "0", "1", ...,
  # so it matched every path: Rscript from cron or a container with LANG=C refused
  # bf_embed_file("data.csv", "out.parquet", "review") as "`input` \"data.csv\" has a name past ASCII"
  dir <- withr::local_tempdir()
  utils::write.csv(data.frame(review = c("a cat sat", "stocks fell")), file.path(dir, "data.csv"), row.names = FALSE)
  out <- run_r(paste(
    sprintf("setwd(\"%s\")", dir),
    "cat('ctype:', Sys.getlocale('LC_CTYPE'), '\\n')",
    "res <- suppressMessages(bertfeat::bf_embed_file('data.csv', 'out.parquet', 'review'))",
    "cat('returned:', res, '\\n')",
    sep = "\n"
  ), env = c("LC_ALL=C", "LANG=C"))
  expect_true("ctype: C " %in% out, info = paste(out, collapse = "\n"))
  expect_true("returned: out.parquet " %in% out, info = paste(out, collapse = "\n"))
  expect_true(file.exists(file.path(dir, "out.parquet")) && file.size(file.path(dir, "out.parquet")) > 0)
})

test_that("only a codeset that names ASCII makes an ASCII session, not a missing one", {
  # a missing or empty codeset counted as ASCII: Windows' R has no `codeset` in l10n_info(), so in cp1250 or cp1251
  # every path past ASCII was refused and native strings were read as UTF-8
  c_locale <- list(MBCS = FALSE, `UTF-8` = FALSE, `Latin-1` = FALSE, codeset = "ANSI_X3.4-1968")
  expect_true(bertfeat:::ascii_session(c_locale))
  expect_true(bertfeat:::ascii_session(utils::modifyList(c_locale, list(codeset = "us-ascii"))))
  windows_cp1250 <- list(MBCS = FALSE, `UTF-8` = FALSE, `Latin-1` = FALSE, codepage = 1250L, system.codepage = 1250L)
  expect_false(bertfeat:::ascii_session(windows_cp1250))
  expect_false(bertfeat:::ascii_session(utils::modifyList(c_locale, list(codeset = ""))))
  expect_false(bertfeat:::ascii_session(utils::modifyList(c_locale, list(codeset = "ISO-8859-2"))))
  expect_false(bertfeat:::ascii_session(list(MBCS = TRUE, `UTF-8` = TRUE, `Latin-1` = FALSE, codeset = "UTF-8")))
})

test_that("bf_embed_file() takes a glob as the command line does", {
  # it was refused as "`input` file ... does not exist", where `bertfeat embed` reads a glob (or a folder)
  dir <- tempfile("bertfeat-glob-")
  dir.create(dir)
  file.copy(csv_with_text(c("a cat sat", "stocks fell")), file.path(dir, "reviews.csv"))
  output <- tempfile("bertfeat-out-", fileext = ".parquet")
  expect_identical(suppressMessages(bf_embed_file(file.path(dir, "*.csv"), output, "review")), output)
  expect_true(file.exists(output))
  err <- expect_error(bf_embed_file(file.path(dir, "*.parquet"), tempfile(), "review"), class = "bertfeat_error_file")
  expect_match(conditionMessage(err), "does not exist, and matches no file as a glob", fixed = TRUE)
})

test_that("bf_embed_file() leaves a glob's `**` to the command line, which reads nested folders", {
  # R's pre-check used Sys.glob(), which has no `**` (it reads it as `*`): a file two folders down was refused as
  # "matches no file as a glob", where `bertfeat embed` reads it; one rule, Python's, now says what a glob matches
  dir <- withr::local_tempdir()
  dir.create(file.path(dir, "2024", "jan"), recursive = TRUE)
  pd <- reticulate::import("pandas", convert = FALSE)
  pd$DataFrame(reticulate::dict(review = c("a cat sat", "stocks fell")))$to_parquet(
    file.path(dir, "2024", "jan", "reviews.parquet"))
  output <- file.path(dir, "out.parquet")
  expect_identical(suppressMessages(bf_embed_file(file.path(dir, "**", "*.parquet"), output, "review",
                                                  pooling = "mean")), output)
  expect_identical(dim(bf_read_features(output)$x), c(2L, 384L))
  err <- expect_error(bf_embed_file(file.path(dir, "**", "*.csv"), tempfile(), "review"), class = "bertfeat_error_file")
  expect_match(conditionMessage(err), "does not exist, and matches no file as a glob", fixed = TRUE)
})

test_that("bf_embed_file() of a URL is refused by the command line, saying to mount it, not said not to exist", {
  # R's pre-check said `input` "s3://..." "does not exist, and matches no file as a glob", which sent users looking
  # for a typo; the command line says bertfeat reads files by their path and how to reach the bucket as one
  err <- expect_error(bf_embed_file("s3://bucket/reviews.csv", tempfile(fileext = ".parquet"), "review"),
                      class = "bertfeat_error_cli")
  expect_match(conditionMessage(err), "is a URL, but bertfeat reads files with ordinary file calls", fixed = TRUE)
})

test_that("bf_embed_file() reads and writes files whose names start with a dash", {
  # the names went to the command line as they are, read there as options: "the following arguments are required:
  # INPUT"; a text column or model named with a dash lost its value the same way
  dir <- tempfile("bertfeat-dash-")
  dir.create(dir)
  old <- setwd(dir)
  on.exit(setwd(old), add = TRUE)
  file.copy(csv_with_text(c("a cat sat", "stocks fell")), "-in.csv")
  expect_identical(suppressMessages(bf_embed_file("-in.csv", "-out.parquet", "review", cache_dir = "-cache")),
                   "-out.parquet")
  expect_true(file.exists("-out.parquet") && dir.exists("-cache"))
})

test_that("bf_embed_file() keeps the columns a vector `keep_col` names, as the command line's repeated --keep-col", {
  # it was refused as "must be a single value ...; write several values in the command line's own syntax as one
  # string", and the command line has no such syntax: an R user could keep one column only (an id, not its label)
  path <- tempfile("bertfeat-in-", fileext = ".csv")
  utils::write.csv(data.frame(id = c("007", "008"), label = c(1, 0), review = c("a cat", "a dog")), path,
                   row.names = FALSE)
  output <- tempfile("bertfeat-out-", fileext = ".parquet")
  suppressMessages(bf_embed_file(path, output, "review", keep_col = c("label", "id")))
  frame <- reticulate::import("pandas", convert = FALSE)$read_parquet(output)
  columns <- reticulate::py_to_r(frame$columns$tolist())
  expect_identical(unlist(columns)[1:3], c("label", "id", "review_cls_000"))
  expect_identical(unlist(reticulate::py_to_r(frame[["id"]]$tolist())), c("007", "008")) # as written
  for (bad in list(c("id", NA), character(), 1:2)) {
    expect_error(bf_embed_file(path, output, "review", keep_col = bad, overwrite = TRUE),
                 class = "bertfeat_error_argument")
  }
  expect_error(bf_embed_file(path, output, "review", id_col = c("id", "label"), overwrite = TRUE),
               class = "bertfeat_error_argument") # one id column: the command line takes one --id-col
})

test_that("a failing command line is a classed error carrying its stderr", {
  input <- csv_with_text(c("a cat", "a dog"))
  err <- expect_error(bf_embed_file(input, tempfile(fileext = ".parquet"), "review", no_such_option = 1),
                      class = "bertfeat_error_cli")
  expect_identical(as.integer(err$status), 2L)
  expect_match(err$stderr, "error:", fixed = TRUE) # argparse's own complaint, passed through
  expect_match(conditionMessage(err), "`bertfeat embed` failed (exit status 2)", fixed = TRUE)
  # naming the argument as given, not the flag it became (--no-such-option=1)
  expect_match(conditionMessage(err), "unrecognized arguments: no_such_option = 1", fixed = TRUE)
})

test_that("the command line's lines bf_embed_file() shows quote paths as R reads them", {
  # they came in Python's quotes: "/tmp/it's $HOME/o.parquet" pasted into a shell named the user's home folder; then
  # in a shell's, beside R's arguments; now in R's, as the arguments are (spelling hunt, 2026-11-27, session 13)
  skip_on_os("windows")
  folder <- file.path(tempfile(), "it's $HOME")
  dir.create(folder, recursive = TRUE)
  output <- file.path(folder, "o.parquet")
  file.create(output)
  err <- expect_error(bf_embed_file(csv_with_text("a cat"), output, "review"), class = "bertfeat_error_cli")
  line <- regmatches(conditionMessage(err), regexpr("output .* exists;", conditionMessage(err)))
  quoted <- sub("^output (.*) exists;$", "\\1", line)
  expect_identical(eval(parse(text = quoted)), output)
  # and the command it names runs in a shell, where `bertfeat` alone is not on the PATH of install_bertfeat()'s
  # virtualenv: the same refusal
  command <- sub(".*Command: ", "", grep("Command: ", strsplit(conditionMessage(err), "\n")[[1]], value = TRUE))
  withr::local_envvar(PATH = "/usr/bin:/bin", LD_LIBRARY_PATH = NA) # a shell of its own, not R's libraries
  said <- suppressWarnings(system2("sh", c("-c", shQuote(paste(command, "2>&1"))), stdout = TRUE))
  expect_identical(attr(said, "status"), 2L)
  expect_match(paste(said, collapse = "\n"), "exists; pass --overwrite", fixed = TRUE)
})

test_that("bf_embed_file() writes the features bf_embed() gives", {
  texts <- c("a cat sat", "NA", "stocks fell")
  input <- csv_with_text(texts)
  output <- tempfile("bertfeat-out-", fileext = ".parquet")
  expect_identical(suppressMessages(bf_embed_file(input, output, "review")), output)
  expect_true(file.exists(output))
  expected <- bf_embed(data.frame(review = texts))
  pd <- reticulate::import("pandas", convert = FALSE)
  frame <- pd$read_parquet(output)
  features <- frame[reticulate::r_to_py(as.list(colnames(expected)))]$to_numpy(dtype = "float32")
  payload <- bertfeat:::python_module()$matrix_payload(features)
  got <- bertfeat:::payload_matrix(payload[[1]], payload[[2]], payload[[3]])
  expect_identical(got, unname(expected))
  expect_error(bf_embed_file(input, output, "review"), class = "bertfeat_error_cli") # exists, no overwrite
  expect_identical(suppressMessages(bf_embed_file(input, output, "review", overwrite = TRUE)), output)
})

test_that("bf_embed_file() gives the command's summary as an R message", {
  # it was written on the process's stderr only: out of reach of suppressMessages(), knitr and RStudio
  input <- csv_with_text(c("a cat sat", "", "a cat sat"))
  output <- tempfile("bertfeat-out-", fileext = ".parquet")
  msg <- expect_message(bf_embed_file(input, output, "review", missing = "zero"), class = "bertfeat_message_summary")
  expect_match(conditionMessage(msg), "^bertfeat embed: wrote .*\\(3 rows x 768 dims per text column\\)")
  expect_match(conditionMessage(msg), "1 texts embedded, 0 from cache, 0 truncated, 1 missing", fixed = TRUE)
  expect_silent(suppressMessages(bf_embed_file(input, output, "review", missing = "zero", overwrite = TRUE)))
})

test_that("the command's progress reaches R as messages as it comes, its error lines only in the error", {
  # progress went to the process's stderr only, which RStudio and knitr never show: a long job was silent there
  lines <- c("bertfeat embed: 20,000 rows, 240 rows/s", "bertfeat embed: error: output 'o.parquet' exists",
             "usage: bertfeat embed [-h] input")
  module <- list(run_cli = function(args, on_line) {
    for (line in lines) on_line(line)
    list(2L, "", paste(lines, collapse = "\n"), "", list())
  })
  seen <- character()
  err <- withCallingHandlers(
    expect_error(bertfeat:::run_cli(module, c("embed", "x.csv")), class = "bertfeat_error_cli"),
    bertfeat_message_progress = function(m) {
      seen <<- c(seen, conditionMessage(m))
      invokeRestart("muffleMessage")
    }
  )
  expect_identical(trimws(seen), lines[1])
  expect_match(conditionMessage(err), "output 'o.parquet' exists", fixed = TRUE)
})

test_that("the command's warnings are R warnings of their classes, as bf_embed() gives them, not progress", {
  # written on stderr as the command line writes them, they came as progress messages: suppressMessages() hid them,
  # and a warning handler (or options(warn = 2)) never saw them
  model <- link_default_model(withr::local_tempdir())
  unlink(file.path(model, "config_sentence_transformers.json"))
  writeLines('{"prompts": {"query": "query: "}, "default_prompt_name": null}',
             file.path(model, "config_sentence_transformers.json"))
  input <- csv_with_text(c("a cat sat", "a dog ran"))
  output <- tempfile("bertfeat-out-", fileext = ".parquet")
  progress <- character()
  seen <- list()
  withCallingHandlers(
    bf_embed_file(input, output, "review", model = model, pooling = "mean"),
    bertfeat_message_progress = function(m) {
      progress <<- c(progress, conditionMessage(m))
      invokeRestart("muffleMessage")
    },
    bertfeat_message_summary = function(m) invokeRestart("muffleMessage"),
    warning = function(w) {
      seen[[length(seen) + 1L]] <<- w
      invokeRestart("muffleWarning")
    }
  )
  expect_length(seen, 1L)
  expect_s3_class(seen[[1]], "bertfeat_warning_model_note")
  expect_s3_class(seen[[1]], "bertfeat_warning")
  expect_match(conditionMessage(seen[[1]]), "defines prompts that its authors put before texts", fixed = TRUE)
  expect_match(conditionMessage(seen[[1]]), "Pass `prompt_name` (or `prefix`) to use one", fixed = TRUE)
  expect_false(any(grepl("warning", progress, fixed = TRUE)))
  # a failed command's warnings come before its error
  module <- list(run_cli = function(args, on_line) {
    list(2L, "", "bertfeat embed: error: row 1 is missing", "", list(list("CacheWarning", "bertfeat cache: ignoring")))
  })
  expect_error(expect_warning(bertfeat:::run_cli(module, c("embed", "x.csv")), "bertfeat cache: ignoring",
                              class = "bertfeat_warning"),
               class = "bertfeat_error_cli")
})

test_that("bf_read_features() reads bf_embed_file()'s output into R: the features as a matrix, the kept columns", {
  # R had no way to its own output (no arrow package here): docs/cli.md said the file "reads straight into R"
  dir <- withr::local_tempdir()
  texts <- c("Loved every minute.", NA, "Dreadful and far too long.")
  input <- file.path(dir, "reviews.csv")
  utils::write.csv(data.frame(id = c(10L, 20L, 30L), review = texts, label = c("pos", NA, "neg"),
                              big = c(3e9, 1, 2)), input, row.names = FALSE, na = "")
  output <- file.path(dir, "features.parquet")
  suppressMessages(bf_embed_file(input, output, "review", pooling = "mean", keep_col = c("id", "label", "big"),
                                 missing = "nan", infer_types = TRUE))
  f <- bf_read_features(output, row_names = "id")
  expected <- bf_embed(data.frame(review = texts), pooling = "mean", missing = "nan")
  expect_identical(dim(f$x), c(3L, 384L))
  expect_identical(colnames(f$x), colnames(expected))
  expect_identical(rownames(f$x), c("10", "20", "30"))
  expect_true(is.double(f$x))
  expect_equal(unname(f$x), unname(expected), tolerance = 1e-5)
  expect_true(all(is.na(f$x[2, ])))
  expect_identical(f$data, tibble::tibble(id = c(10L, 20L, 30L), label = c("pos", NA, "neg"), big = c(3e9, 1, 2)))
  expect_identical(f$provenance$pooling, "mean")
  expect_identical(f$provenance$dims, 384L)
  expect_identical(rownames(bf_read_features(output, row_names = "big")$x), c("3000000000", "1", "2"))
  # a row name column must be one that names each row once
  expect_error(bf_read_features(output, row_names = "label"), class = "bertfeat_error_argument")
  expect_error(bf_read_features(output, row_names = "nope"), class = "bertfeat_error_missing_column")
  expect_error(bf_read_features(file.path(dir, "none.parquet")), class = "bertfeat_error_file")
  expect_error(bf_read_features(input), class = "bertfeat_error_input")
})

test_that("a CSV's kept columns come back as text unless infer_types = TRUE, as docs/r.md says", {
  # docs/r.md said kept columns come "whole numbers as integer, ... booleans as logical, dates as Date" after an example
  # on a CSV, whose kept columns the command line reads as text by default: glmnet on such a score stops with
  # "non-numeric argument to binary operator"
  dir <- withr::local_tempdir()
  input <- file.path(dir, "reviews.csv")
  utils::write.csv(data.frame(id = c("007", "012"), review = c("Loved it.", "Dreadful."), score = c(4.5, 1),
                              day = as.Date(c("2026-11-26", "2026-11-27")), ok = c(TRUE, FALSE)),
                   input, row.names = FALSE)
  as_text <- file.path(dir, "text.parquet")
  suppressMessages(bf_embed_file(input, as_text, "review", pooling = "mean", keep_col = c("id", "score", "day", "ok")))
  expect_identical(bf_read_features(as_text)$data,
                   tibble::tibble(id = c("007", "012"), score = c("4.5", "1"), day = c("2026-11-26", "2026-11-27"),
                                  ok = c("TRUE", "FALSE")))
  typed <- file.path(dir, "typed.parquet")
  suppressMessages(bf_embed_file(input, typed, "review", pooling = "mean", keep_col = c("id", "score", "day", "ok"),
                                 infer_types = TRUE))
  expect_identical(bf_read_features(typed)$data,
                   tibble::tibble(id = c(7L, 12L), score = c(4.5, 1), day = as.Date(c("2026-11-26", "2026-11-27")),
                                  ok = c(TRUE, FALSE)))
  docs <- file.path(repo_root() %||% skip("not run from the source tree"), "docs", "r.md")
  said <- gsub("\\s+", " ", paste(readLines(docs, encoding = "UTF-8"), collapse = " "))
  expect_match(said, "A CSV's kept columns are its text, as written (`007` stays `007`), unless `infer_types = TRUE`",
               fixed = TRUE)
  help <- paste(capture.output(tools::Rd2txt(tools::Rd_db("bertfeat")[["bf_read_features.Rd"]],
                                             options = list(underline_titles = FALSE))), collapse = " ")
  expect_match(gsub("\\s+", " ", help), "a CSV's kept columns are its text, as written, unless .?bf_embed_file\\(\\).? was given .?infer_types = TRUE.?")
})

test_that("bf_read_features() gives kept list, struct and bytes columns as R values, not Python's text of them", {
  # a list column (tags a pandas frame wrote as lists) came as the text "['x', 'y']", a struct as "{'a': 1, ...}"
  dir <- withr::local_tempdir()
  pa <- reticulate::import("pyarrow")
  input <- file.path(dir, "reviews.parquet")
  table <- reticulate::py_eval(paste0(
    "__import__('pyarrow').table({'id': [1, 2, 3], 'review': ['a cat sat', 'stocks fell', 'a dog'], ",
    "'tags': [['x', 'y'], None, []], 'st': [{'a': 1, 'b': 'u'}, None, {'a': None, 'b': 'v'}], ",
    "'blob': [b'\\x00a', None, b'\\xff']})"), convert = FALSE)
  reticulate::import("pyarrow.parquet")$write_table(table, input)
  output <- file.path(dir, "features.parquet")
  suppressMessages(bf_embed_file(input, output, "review", pooling = "mean", keep_col = c("id", "tags", "st", "blob")))
  f <- bf_read_features(output, row_names = "id")
  expect_identical(f$data$tags, list(c("x", "y"), NULL, character(0)))
  expect_identical(f$data$st, tibble::tibble(a = c(1L, NA, NA), b = c("u", NA, "v")))
  expect_identical(f$data$blob, list(as.raw(c(0, 97)), NULL, as.raw(255)))
  expect_identical(rownames(f$x), c("1", "2", "3"))
  # a column of lists names no row
  expect_error(bf_read_features(output, row_names = "tags"), class = "bertfeat_error_argument")
  expect_error(bf_read_features(output, row_names = "st"), class = "bertfeat_error_argument")
})

test_that("bf_read_features() gives a kept duration as a difftime in seconds, not the text of its count", {
  # a pandas timedelta64 column (an R difftime the arrow package wrote) came as "1500000": microseconds, no unit said
  dir <- withr::local_tempdir()
  input <- file.path(dir, "calls.parquet")
  table <- reticulate::py_eval(paste0(
    "__import__('pyarrow').table({'review': ['a cat sat', 'stocks fell', 'a dog'], 'wait': __import__('pyarrow')",
    ".array([1500000, None, 90000000], __import__('pyarrow').duration('us'))})"), convert = FALSE)
  reticulate::import("pyarrow.parquet")$write_table(table, input)
  output <- file.path(dir, "features.parquet")
  suppressMessages(bf_embed_file(input, output, "review", pooling = "mean", keep_col = "wait"))
  wait <- bf_read_features(output)$data$wait
  expect_identical(wait, as.difftime(c(1.5, NA, 90), units = "secs"))
  expect_identical(format(wait[3] + as.POSIXct("2026-11-27 10:00:00", tz = "UTC")), "2026-11-27 10:01:30")
})

test_that("bf_read_features() gives Date and POSIXct id columns back as R wrote them, not arrow's text", {
  # a POSIXct id written by write.csv() as "2024-01-01 10:00:00" came back as the text "2024-01-01 10:00:00.000000000":
  # merge() on it matched no row, and row_names named the rows otherwise; a Date came back as text
  withr::local_timezone("America/New_York")
  dir <- withr::local_tempdir()
  df <- data.frame(day = as.Date("2024-03-09") + 0:2, when = as.POSIXct("2024-03-09 10:00:00") + c(0, 86400, 1.5),
                   review = c("a cat sat", "stocks fell", "a dog"))
  input <- file.path(dir, "reviews.csv")
  utils::write.csv(df, input, row.names = FALSE)
  output <- file.path(dir, "features.parquet")
  suppressMessages(bf_embed_file(input, output, "review", pooling = "mean", keep_col = c("day", "when"),
                                 infer_types = TRUE))
  f <- bf_read_features(output, row_names = "when")
  expect_identical(f$data$day, df$day)
  expect_s3_class(f$data$when, "POSIXct")
  expect_equal(as.numeric(f$data$when), as.numeric(df$when)) # the same instants, in the session's zone
  expect_identical(format(f$data$when), format(df$when))
  expect_identical(rownames(f$x), as.character(df$when))
  expect_identical(nrow(merge(df, f$data)), 3L)
})

test_that("bf_read_features() reads a `layout = \"list\"` output as the same matrix as the default layout", {
  # it was refused ("write it again without layout": the whole model pass again) though the list columns hold the
  # same features
  dir <- withr::local_tempdir()
  input <- file.path(dir, "reviews.csv")
  utils::write.csv(data.frame(id = c("a", "b", "c"), review = c("Loved it.", NA, "Far too long.")), input,
                   row.names = FALSE, na = "")
  read <- lapply(c("columns", "list"), function(layout) {
    output <- file.path(dir, paste0(layout, ".parquet"))
    suppressMessages(bf_embed_file(input, output, "review", pooling = "cls+mean", layers = "-1,-2",
                                   layer_agg = "concat", missing = "nan", keep_col = "id", layout = layout))
    bf_read_features(output, row_names = "id")
  })
  expect_identical(read[[2]]$x, read[[1]]$x)
  expect_identical(read[[2]]$data, read[[1]]$data)
  expect_identical(dim(read[[2]]$x), c(3L, 4L * 384L))
  expect_identical(colnames(read[[2]]$x)[c(1, 385, 769)], c("review_cls_l6_000", "review_cls_l5_000", "review_mean_l6_000"))
  expect_true(all(is.nan(read[[2]]$x["b", ])))
  expect_identical(read[[2]]$provenance$layout, "list")
})

test_that("bf_read_features() of an output without kept columns gives `data` of its rows, to bind beside `x`", {
  # `data` was a 0 x 0 tibble: cbind(f$data, f$x) failed "arguments imply differing number of rows: 0, 2"
  input <- csv_with_text(c("a cat sat", "stocks fell"))
  output <- tempfile("bertfeat-out-", fileext = ".parquet")
  suppressMessages(bf_embed_file(input, output, "review", pooling = "mean"))
  f <- bf_read_features(output)
  expect_identical(dim(f$data), c(2L, 0L))
  expect_identical(dim(cbind(f$data, f$x)), c(2L, 384L))
})

test_that("bf_embed_file() reads its options' strings as UTF-8, as bf_embed() does, refusing bytes that are not", {
  # `prefix = "caf\xe9: "` (a script or a value read in Latin-1) went to the command line as the text "caf<e9>: " and
  # was put before every text, silently, where bf_embed() refuses it; a `keep_col` was "not found" as "caf<e9>"
  input <- csv_with_text(c("a cat sat", "stocks fell"))
  err <- expect_error(bf_embed_file(input, tempfile(fileext = ".parquet"), "review", prefix = "caf\xe9: "),
                      class = "bertfeat_error_argument")
  expect_match(conditionMessage(err), '`prefix` is not valid UTF-8 ("caf\\xe9: ")', fixed = TRUE)
  expect_error(bf_embed_file(input, tempfile(fileext = ".parquet"), "review", keep_col = c("id", "caf\xe9")),
               class = "bertfeat_error_argument")
  marked <- "caf\xe9: "
  Encoding(marked) <- "latin1"
  output <- tempfile(fileext = ".parquet")
  suppressMessages(bf_embed_file(input, output, "review", pooling = "mean", prefix = marked))
  expect_identical(bf_read_features(output)$provenance$prefix, "caf\u00e9: ")
})

test_that("bf_embed_file() reads a database's text export with quoting = \"backslash\", and refuses it without", {
  # (a database and shell exports hunt, 2026-11-27) PostgreSQL's \copy ... TO writes a line break as \n and NULL as
  # \N: both were embedded as the two characters
  dir <- withr::local_tempdir()
  input <- file.path(dir, "copy.tsv")
  writeLines(c("id\treview", "1\tLoved it.\\nWould watch again.", "2\t\\N", "3\tA \\\\ B"), input)
  output <- file.path(dir, "features.parquet")
  err <- expect_error(bf_embed_file(input, output, "review", pooling = "mean", missing = "nan"),
                      class = "bertfeat_error_cli")
  # in R's syntax: it read `--quoting backslash (quoting = "backslash")` (spelling hunt, 2026-11-27, session 13)
  expect_match(conditionMessage(err), 'Pass quoting = "backslash" to read', fixed = TRUE)
  expect_no_match(conditionMessage(err), "--quoting", fixed = TRUE)
  suppressMessages(bf_embed_file(input, output, "review", pooling = "mean", missing = "nan", id_col = "id",
                                 quoting = "backslash"))
  f <- bf_read_features(output, row_names = "id")
  expected <- bf_embed(c("Loved it.\nWould watch again.", NA, "A \\ B"), pooling = "mean", missing = "nan")
  expect_equal(unname(f$x), unname(expected), tolerance = 1e-5)
  expect_true(all(is.na(f$x[2, ])))
})

test_that("bf_embed_file() reads MySQL's INTO OUTFILE ... ENCLOSED BY '\"' with quoting = \"csv-backslash\"", {
  # (a CSV dialects hunt, 2026-11-27, session 15) MySQL escapes a backslash and a quote inside a quoted value: read as
  # CSV its texts kept every escaping backslash, or it was told to export the query again
  dir <- withr::local_tempdir()
  input <- file.path(dir, "outfile.csv")
  writeLines(c('"id","review"', '"1","C:\\\\dir"', '"2","say \\"hi\\""', '"3",\\N'), input)
  output <- file.path(dir, "features.parquet")
  err <- expect_error(bf_embed_file(input, output, "review", pooling = "mean", missing = "nan"),
                      class = "bertfeat_error_cli")
  expect_match(conditionMessage(err), 'pass quoting = "csv-backslash", which reads its escapes', fixed = TRUE)
  expect_no_match(conditionMessage(err), "--quoting", fixed = TRUE)
  suppressMessages(bf_embed_file(input, output, "review", pooling = "mean", missing = "nan", id_col = "id",
                                 quoting = "csv-backslash"))
  f <- bf_read_features(output, row_names = "id")
  expected <- bf_embed(c("C:\\dir", 'say "hi"', NA), pooling = "mean", missing = "nan")
  expect_equal(unname(f$x), unname(expected), tolerance = 1e-5)
})
