/*
 * test_it_recordfile_kcat.c - test_recordfile_kcat.c against the real Kafka
 * broker of scripts/servers (CF_TEST_KAFKA) instead of the mock cluster.
 * Fails when CF_TEST_KAFKA is not set or the broker is unreachable.
 */
#define CF_KCAT_REAL_BROKER 1
#include "test_recordfile_kcat.c"
