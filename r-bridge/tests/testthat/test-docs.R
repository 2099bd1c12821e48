# The R calls the docs show take only arguments the functions take. Users copy them from the README, docs/r.md,
# the examples and the help pages; an argument renamed or dropped would leave a call that fails ("unused argument")
# or, through a `...`, is refused at run time. Read from the code (parsed, not run: they need models and data);
# docs/r.md's quick start and recipes step, which need only the bundled model, are run (the last test).

# the R code of a file: a Markdown file's ```r blocks and its inline `f(...)` code, an Rd file's \examples, an R
# script whole
r_code_of <- function(path) {
  text <- paste(readLines(path, warn = FALSE, encoding = "UTF-8"), collapse = "\n")
  if (grepl("\\.md$", path)) {
    blocks <- regmatches(text, gregexpr("(?s)```r\n.*?```", text, perl = TRUE))[[1]]
    inline <- regmatches(text, gregexpr("`[a-z_:]+\\([^`\n]*\\)`", text))[[1]]
    return(c(sub("^```r\n", "", sub("```$", "", blocks)), gsub("`", "", inline)))
  }
  if (grepl("\\.Rd$", path)) {
    examples <- regmatches(text, regexpr("(?s)\\\\examples\\{.*", text, perl = TRUE))
    return(gsub("\\\\%", "%", gsub("\\\\(examples|dontrun|donttest)\\{", "{", examples)))
  }
  text
}

# every call to one of `functions` in `code`: list(name, call), with the calls inside its arguments
calls_to <- function(code, functions) {
  found <- list()
  walk <- function(e) {
    if (is.call(e)) {
      head <- e[[1]]
      name <- if (is.name(head)) as.character(head) else if (is.call(head) && identical(head[[1]], as.name("::")))
        as.character(head[[3]]) else ""
      if (name %in% functions) found[[length(found) + 1L]] <<- list(name = name, call = e)
      for (part in as.list(e)[-1]) if (!missing(part)) walk(part)
    } else if (is.expression(e)) {
      for (part in as.list(e)) walk(part)
    }
  }
  for (piece in code) {
    parsed <- tryCatch(parse(text = piece, keep.source = FALSE), error = function(e) NULL)
    if (!is.null(parsed)) walk(parsed)
  }
  found
}

# the long options of `bertfeat embed`, from docs/cli-help.md (the parser's own help, held to it by
# tests/test_cli_help.py), as bf_embed_file() names them in `...`
embed_options <- function(root) {
  help <- paste(readLines(file.path(root, "docs", "cli-help.md"), warn = FALSE), collapse = "\n")
  embed <- strsplit(strsplit(help, "## bertfeat embed\n", fixed = TRUE)[[1]][2], "\n## ", fixed = TRUE)[[1]][1]
  flags <- unique(regmatches(embed, gregexpr("(?<![\\w-])--[a-z][a-z-]+", embed, perl = TRUE))[[1]])
  gsub("-", "_", sub("^--", "", setdiff(flags, "--help")), fixed = TRUE)
}

test_that("every argument of a bertfeat call in the README, docs/r.md, the examples and the help is one it takes", {
  root <- repo_root()
  skip_if(is.null(root), "not run from a bertfeat checkout")
  exported <- getNamespaceExports("bertfeat")
  exported <- exported[vapply(exported, function(f) is.function(getExportedValue("bertfeat", f)), logical(1))]
  files <- c(file.path(root, "README.md"), list.files(file.path(root, "docs"), "\\.md$", full.names = TRUE),
             list.files(file.path(root, "examples"), "\\.R$", full.names = TRUE),
             list.files(file.path(root, "r-bridge", "man"), "\\.Rd$", full.names = TRUE))
  # what each function's `...` takes by name (step_bert_embed's `...` are column selectors: unnamed)
  dots <- list(bf_embed = c(bertfeat:::DOTS_PARAMS, "columns"), bf_probe = bertfeat:::PROBE_DOTS_PARAMS,
               bf_embed_file = embed_options(root), step_bert_embed = character())
  checked <- character()
  for (path in files) {
    for (found in calls_to(r_code_of(path), exported)) {
      fun <- getExportedValue("bertfeat", found$name)
      where <- paste0(basename(path), ": ", paste(deparse(found$call, width.cutoff = 500L), collapse = " "))
      args <- as.list(found$call)[-1]
      if (any(vapply(args, identical, logical(1), as.name("...")))) { # a synopsis, docs/r.md's table: the arguments
        shown <- vapply(args, deparse, character(1))                 # by name, in the function's order
        expect_equal(shown, intersect(names(formals(fun)), shown), label = where)
        checked <- c(checked, found$name)
        next
      }
      matched <- tryCatch(match.call(fun, found$call), error = function(e) conditionMessage(e))
      expect_true(is.call(matched), label = paste(where, "-", matched))
      if (!is.call(matched)) next
      named <- setdiff(as.character(names(as.list(matched))[-1]), c(names(formals(fun)), ""))
      expect_equal(setdiff(named, dots[[found$name]]), character(), label = where)
      options <- as.list(matched)$options # the step's options: bf_embed()'s `...` as a list
      if (found$name == "step_bert_embed" && is.call(options)) {
        expect_equal(setdiff(as.character(names(as.list(options))[-1]), bertfeat:::DOTS_PARAMS), character(),
                     label = where)
      }
      checked <- c(checked, found$name)
    }
  }
  # the docs call each of these at least once, so a reader that found nothing fails here
  expect_true(all(c("bf_embed", "bf_embed_file", "bf_probe", "step_bert_embed", "bf_read_features",
                    "install_bertfeat") %in% checked))
  expect_gt(length(checked), 20)
})

test_that("bf_probe()'s help says what its `...` takes", {
  rd <- tools::Rd_db("bertfeat")[["bf_probe.Rd"]]
  text <- paste(capture.output(tools::Rd2txt(rd, options = list(underline_titles = FALSE))), collapse = " ")
  said <- strsplit(strsplit(text, "Other parameters of the Python probe:", fixed = TRUE)[[1]][2], "groups:",
                   fixed = TRUE)[[1]][1]
  named <- regmatches(said, gregexpr("[a-z]+(_[a-z]+)*", said))[[1]]
  expect_setequal(intersect(named, bertfeat:::PROBE_DOTS_PARAMS), bertfeat:::PROBE_DOTS_PARAMS)
})

test_that("docs/r.md's quick start and recipes step run, giving what their comments say", {
  # (found by a docs against the program hunt, 2026-11-27, session 15) docs/r.md's step asked for pooling = "mean"
  # and said bake() gives `score, review_cls_000, ..., review_mean_383`: it gives no CLS column. Its R blocks ran
  # in no test; these two run on the bundled model, each value a comment states checked against what R gives.
  root <- repo_root()
  skip_if(is.null(root), "not run from a bertfeat checkout")
  doc <- paste(readLines(file.path(root, "docs", "r.md"), warn = FALSE, encoding = "UTF-8"), collapse = "\n")
  block_after <- function(heading) {
    rest <- strsplit(doc, heading, fixed = TRUE)[[1]][2]
    sub("(?s)```.*", "", sub("(?s)^.*?```r\n", "", rest, perl = TRUE), perl = TRUE)
  }
  env <- new.env()
  env$train <- data.frame(score = c(5, 1, 3), review = c("Loved it.", "Dreadful.", "Fine."))
  env$test <- data.frame(score = 4, review = "Not bad at all.")
  checked <- 0L
  for (block in c(block_after("## Quick start"), block_after("### A recipes step"))) {
    block <- gsub('cache_dir = "~/.cache/bertfeat"', "cache_dir = NULL", block, fixed = TRUE)
    for (expr in parse(text = block, keep.source = TRUE)) {
      value <- suppressPackageStartupMessages(eval(expr, env))
      said <- regmatches(block, regexpr(paste0("\\Q", trimws(deparse(expr)[1]), "\\E[^\n]*#[^\n]*"), block,
                                        perl = TRUE))
      if (!length(said)) next
      comment <- trimws(sub("^[^#]*#", "", said))
      if (is.data.frame(value)) { # bake() and tidy(): the first columns it names, then "..." or one more, and the last
        shown <- trimws(strsplit(comment, ",", fixed = TRUE)[[1]])
        expect_equal(shown[-c(length(shown) - 1L, length(shown))], names(value)[seq_len(length(shown) - 2L)])
        expect_equal(shown[length(shown)], names(value)[ncol(value)])
      } else if (is.numeric(value)) {
        expect_equal(sub(":.*", "", comment), paste(value, collapse = " x "))
      } else if (is.character(value)) {
        expect_equal(comment, paste0('"', value, '"', collapse = " "))
      } else next
      checked <- checked + 1L
    }
  }
  expect_equal(checked, 5L) # dim, colnames, rownames, bake's and tidy's columns
})
