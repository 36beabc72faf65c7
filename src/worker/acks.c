/*
 * acks.c - acknowledgement groups. A source task opens one group per poll
 * batch; each message sent adds one to its pending count and each
 * acknowledgement (a delivery report, a direct sink's flush, from any
 * thread) takes one off, so a record costs an atomic counter, not an
 * allocation. A record the stop kept from being sent withdraws its group:
 * offsets stop before it without an error (see source_commit.c).
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cdcflow/log.h"
#include "worker_state.h"

void cf_ack_done(cf_ack *a, bool ok) {
    if (!ok) atomic_store(&a->failed, true);
    atomic_fetch_sub(&a->pending, 1);
}

void cf_ack_done_n(cf_ack *a, int n) { atomic_fetch_sub(&a->pending, n); }

/* One record of a's group not sent because the task stops (see withdrawn). */
void cf_ack_withdraw(cf_ack *a) {
    atomic_store(&a->withdrawn, true);
    atomic_fetch_sub(&a->pending, 1);
}

cf_ack *cf_ack_new(void) {
    cf_ack *a = cf_xcalloc(1, sizeof *a);
    atomic_init(&a->pending, 1);
    atomic_init(&a->failed, false);
    atomic_init(&a->withdrawn, false);
    return a;
}

/* Free what an ack holds; the ack and its arrays stay for reuse. */
void cf_ack_clear(cf_ack *a) {
    for (size_t i = 0; i < a->n_offs; i++) {
        cf_value_destroy(a->offs[i].part);
        cf_value_destroy(a->offs[i].off);
    }
    for (size_t i = 0; i < a->n_recs; i++) cf_record_destroy(a->recs[i]);
    a->n_offs = a->n_recs = a->n_records = 0;
}

void cf_ack_free(cf_ack *a) {
    cf_ack_clear(a);
    free(a->offs);
    free(a->recs);
    free(a);
}
