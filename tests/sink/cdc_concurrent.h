/*
 * cdc_concurrent.h - several tasks (threads, one engine each) evolving the
 * same table at the same moment: every round both add the same new column
 * and write their own rows, flushing together. With
 * mediateConcurrentSchemaUpdates the DDL is serialised and no flush fails.
 */
#ifndef CDC_CONCURRENT_H
#define CDC_CONCURRENT_H

#include <pthread.h>
#include <stdio.h>

#include "cdcflow/sink.h"

#define CC_ROUNDS 12
#define CC_TASKS 3

typedef struct cc_task {
    const cf_sink_options *o;
    const cf_sink_target *tg;
    int id;
    pthread_barrier_t *bar;
    cf_err err;
    int rc;
} cc_task;

static inline void *cc_main(void *arg) {
    cc_task *t = arg;
    cf_sink *s = NULL;
    t->rc = cf_sink_new(t->o, t->tg, &s, &t->err);
    cf_schema *ks = cf_schema_new_struct();
    cf_schema_add_field(ks, "id", cf_schema_primitive(CF_INT32, false), NULL);
    for (int round = 0; round < CC_ROUNDS; round++) {
        cf_schema *vs = cf_schema_new_struct();
        cf_schema_add_field(vs, "id", cf_schema_primitive(CF_INT32, false), NULL);
        for (int f = 0; f <= round; f++) {
            char name[16];
            snprintf(name, sizeof name, "f%d", f);
            cf_schema_add_field(vs, name, cf_schema_primitive(CF_INT64, true), NULL);
        }
        cf_record *r = cf_record_new();
        cf_record_set_topic(r, "shop.evolving");
        cf_value *k = cf_value_struct(cf_schema_ref(ks));
        int32_t id = t->id * 1000 + round;
        cf_value_struct_set(k, "id", cf_value_int32(id), NULL);
        cf_record_set_key(r, cf_schema_ref(ks), k);
        cf_value *v = cf_value_struct(cf_schema_ref(vs));
        cf_value_struct_set(v, "id", cf_value_int32(id), NULL);
        char name[16];
        snprintf(name, sizeof name, "f%d", round);
        cf_value_struct_set(v, name, cf_value_int64(round), NULL);
        cf_record_set_value(r, vs, v);
        r->partition = t->id, r->offset = round;
        pthread_barrier_wait(t->bar); /* everyone adds column f<round> now */
        if (!t->rc) t->rc = cf_sink_put(s, &r, 1, &t->err);
        if (!t->rc) t->rc = cf_sink_flush(s, &t->err);
        cf_record_destroy(r);
    }
    cf_schema_unref(ks);
    cf_sink_destroy(s);
    return NULL;
}

/* Returns the number of failed tasks (their errors printed). */
static inline int cc_run(const cf_sink_options *o, const cf_sink_target *tg) {
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, CC_TASKS);
    cc_task t[CC_TASKS];
    pthread_t th[CC_TASKS];
    for (int i = 0; i < CC_TASKS; i++) {
        t[i] = (cc_task){o, tg, i, &bar, {0}, 0};
        pthread_create(&th[i], NULL, cc_main, &t[i]);
    }
    int failed = 0;
    for (int i = 0; i < CC_TASKS; i++) {
        pthread_join(th[i], NULL);
        if (t[i].rc) {
            char b[2048];
            fprintf(stderr, "task %d: %s\n", i, cf_err_format(&t[i].err, b, sizeof b));
            failed++;
        }
    }
    pthread_barrier_destroy(&bar);
    return failed;
}

#endif

/* Two tasks delivering the same history at the same time, at different
 * paces (a zombie and its successor): both apply every change, so their
 * writes to one key race; the result must still be the source state. */
typedef struct race_task {
    const cf_sink_options *o;
    const cf_sink_target *tg;
    cf_record **recs;
    size_t n;
    unsigned seed;
    cf_err err;
    int rc;
} race_task;

static inline void *race_main(void *arg) {
    race_task *t = arg;
    cf_sink *s = NULL;
    t->rc = cf_sink_new(t->o, t->tg, &s, &t->err);
    size_t pos = 0;
    unsigned r = t->seed;
    while (!t->rc && pos < t->n) {
        r = r * 1103515245u + 12345u;
        size_t k = 1 + (r >> 16) % 97;
        if (pos + k > t->n) k = t->n - pos;
        t->rc = cf_sink_put(s, t->recs + pos, k, &t->err);
        pos += k;
        if (!t->rc) t->rc = cf_sink_flush(s, &t->err);
    }
    cf_sink_destroy(s);
    return NULL;
}

static inline int race_run(const cf_sink_options *o, const cf_sink_target *tg, cf_record **recs, size_t n) {
    race_task t[2] = {{o, tg, recs, n, 1, {0}, 0}, {o, tg, recs, n, 2, {0}, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, race_main, &t[i]);
    int failed = 0;
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        if (t[i].rc) {
            char b[2048];
            fprintf(stderr, "race task %d: %s\n", i, cf_err_format(&t[i].err, b, sizeof b));
            failed++;
        }
    }
    return failed;
}
