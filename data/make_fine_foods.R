# Builds data/fine_foods.csv.gz: 5,000 Amazon fine-food reviews labelled "great" (5 stars) or "other".
# Source: Debian's r-cran-modeldata (small_fine_foods; MIT-licensed package; the reviews come from
# McAuley and Leskovec (2013), "From amateurs to connoisseurs", via the SNAP collection).
# Run from the repository root: Rscript data/make_fine_foods.R
library(modeldata)
data(small_fine_foods)
out <- rbind(cbind(split = "train", training_data), cbind(split = "test", testing_data))
out$review <- gsub("<br ?/?>", " ", out$review)
out <- data.frame(id = sprintf("food-%04d", seq_len(nrow(out))), split = out$split, product = out$product,
                  score = as.character(out$score), review = out$review, stringsAsFactors = FALSE)
con <- gzfile("data/fine_foods.csv.gz", "w")
write.csv(out, con, row.names = FALSE, fileEncoding = "UTF-8")
close(con)
print(table(out$split, out$score))
