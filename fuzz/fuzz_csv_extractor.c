/*
 * fuzz_csv_extractor.c - the CSV extractor on arbitrary bytes (see
 * extract_fuzz.h for what must hold).
 */
#include "extract_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return cf_fuzz_extract(CF_FORMAT_CSV, data, size); }
