/*
 * fuzz_jsonl_extractor.c - the JSON lines and record-file envelope
 * extractors on arbitrary bytes (see extract_fuzz.h for what must hold).
 */
#include "extract_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cf_fuzz_extract(CF_FORMAT_JSONL, data, size);
    return cf_fuzz_extract(CF_FORMAT_ENVELOPE, data, size);
}
