/*
 * fuzz_config_parse.c - libFuzzer target for configuration files: the
 * .properties parser (java.util.Properties rules) and the Kafka Connect JSON
 * reader, then validation of whatever they produce against the common
 * connector tables. Bad input must give an error with a message, never a
 * crash or a leak.
 */
#include <stdint.h>
#include <stdlib.h>

#include "cdcflow/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    cf_err err;
    const cf_cfg_table *tables[] = {&cf_connector_common_table, &cf_sink_common_table};
    for (int form = 0; form < 2; form++) {
        cf_props *p = NULL;
        char *name = NULL;
        cf_code rc = form == 0 ? cf_props_from_properties(text, size, &p, &err)
                               : cf_props_from_json(text, size, &p, &name, &err);
        if (rc != CF_OK) {
            if (p || !err.message[0]) abort();
            continue;
        }
        cf_config *c = NULL;
        char *problems = NULL;
        if (cf_config_parse(tables, 2, p, &c, &problems, &err) == CF_OK) {
            char *cross = NULL;
            cf_connector_config_check(c, true, &cross, &err);
            free(cross);
            cf_config_destroy(c);
        } else if (!problems || !*problems) {
            abort();
        }
        free(problems);
        free(name);
        cf_props_destroy(p);
    }
    return 0;
}
