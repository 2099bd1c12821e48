# Builds data/austen.csv.gz: the paragraphs of Jane Austen's six novels, labelled by novel.
# Source: Debian's r-cran-janeaustenr (the Project Gutenberg texts, public domain).
# Run from the repository root: Rscript data/make_austen.R
library(janeaustenr)

books <- austen_books()
rows <- list()
for (book in levels(books$book)) {
  lines <- trimws(books$text[books$book == book])
  # a paragraph is a run of non-blank lines
  para_id <- cumsum(lines == "")
  keep <- lines != ""
  paras <- unname(tapply(lines[keep], para_id[keep], paste, collapse = " "))
  n_words <- lengths(strsplit(paras, "\\s+"))
  is_heading <- grepl("^(CHAPTER|Chapter|VOLUME|Volume)\\b", paras) & n_words <= 4
  paras <- paras[!is_heading & n_words >= 5]
  rows[[book]] <- data.frame(book = book, text = paras, stringsAsFactors = FALSE)
}
out <- do.call(rbind, rows)
out <- cbind(id = sprintf("austen-%05d", seq_len(nrow(out))), out)
out$n_words <- lengths(strsplit(out$text, "\\s+"))
con <- gzfile("data/austen.csv.gz", "w")
write.csv(out, con, row.names = FALSE, fileEncoding = "UTF-8")
close(con)
print(table(out$book))
print(summary(out$n_words))
