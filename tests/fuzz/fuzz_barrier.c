/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_barrier - model-based fuzzing of sb_barrier (see fuzz_common.h; the
 * future lifecycle is fuzz_lifecycle.h's).
 *
 * Reference model (include/syncband/barrier.h):
 *   parties   N (0 only through the static initialiser)
 *   queue     the waits of the current generation that arrived, in order
 *             (the barrier's arrival count is its length)
 *   gen       the current generation, counted from 0
 *   first poll   N == 0: -EINVAL.  N - 1 waits queued: this is the
 *                generation's leader - every queued wait is released
 *                (woken), the queue empties, gen + 1, and it returns 0;
 *                else register, SB_PENDING
 *   later poll   SB_PENDING while registered (waker replacement); 0 once
 *                released, and again on every later poll; -ECANCELED
 *                after cancel
 *   is_leader    true for exactly the waits that completed as a
 *                generation's leader (checked for every slot after every
 *                step, and no two live slots of one generation lead)
 *   cancel       registered: withdraw the arrival (unregister, drop the
 *                waker); released but not observed, idle or done: nothing
 *   wait_blocking(0)   N == 0: -EINVAL; the leader's arrival: release the
 *                queue, SB_BARRIER_LEADER; else it arrives and withdraws:
 *                -ETIMEDOUT, nothing changed
 *   destroy      -EBUSY while waits are registered (the barrier keeps
 *                working); init with 0 or more than the maximum: -EINVAL
 *
 * Input: a header byte (the parties and the initialiser), then a sequence of
 * operations, one opcode byte (see `ops` below) and its argument bytes each.
 * tests/fuzz/make_seeds.py writes the seed corpus.
 */
#include "fuzz_lifecycle.h"

static sb_barrier *bar;

static struct {
	size_t parties;
	unsigned gen;
	fz_queue q;
	bool leader[FZ_NALL];  /* completed as its generation's leader */
	unsigned gen_of[FZ_NALL]; /* the generation a slot arrived in */
} M;

/* The header's and destroy's choice of parties; 0 goes through SB_BARRIER_INIT. */
static const size_t party_choices[8] = { 1, 2, 3, 4, 5, 8, 40, 0 };

static sb_barrier_wait *slot_wait(int s)
{
	return fz_slots[s].f;
}

static void step_end(void)
{
	fz_step_check_wakers();
	FZ_ASSERT_MODEL(M.parties == 0 || (size_t)M.q.len < M.parties);
	int leaders = 0;
	unsigned leader_gens[FZ_NALL];
	for (int s = 0; s < FZ_NALL; s++) {
		if (fz_slots[s].st == FS_UNUSED)
			continue;
		bool lead = sb_barrier_wait_is_leader(slot_wait(s));
		FZ_EXPECT("sb_barrier_wait_is_leader", M.leader[s], lead);
		if (!lead)
			continue;
		for (int i = 0; i < leaders; i++)
			if (leader_gens[i] == M.gen_of[s])
				fz_fail("two leaders of generation %u (slot %d)", M.gen_of[s], s);
		leader_gens[leaders++] = M.gen_of[s];
	}
}

static void new_barrier(uint8_t choice, bool static_init)
{
	size_t n = party_choices[choice % 8];
	bar = fz_xmalloc(sizeof *bar);
	if (static_init || n == 0) {
		if (n == 0)
			FZ_EXPECT_RES("sb_barrier_init(0)", -EINVAL, sb_barrier_init(bar, 0));
		*bar = (sb_barrier)SB_BARRIER_INIT(n);
	} else {
		FZ_EXPECT_RES("sb_barrier_init(MAX + 1)", -EINVAL,
			      sb_barrier_init(bar, SB_BARRIER_MAX_PARTIES + 1));
		FZ_EXPECT_RES("sb_barrier_init", 0, sb_barrier_init(bar, n));
	}
	fz_locks[0] = FZ_LOCKWORD(bar);
	M.parties = n;
	M.q.len = 0;
}

static void wait_init(void *f, int s)
{
	M.leader[s] = false;
	sb_barrier_wait_init(f, bar);
}

/* The last arrival of a generation: release it; the next one starts. */
static void m_release_generation(void)
{
	while (M.q.len > 0)
		fz_complete(fz_q_pop(&M.q), 0);
	M.gen++;
}

static int first_poll(int s)
{
	if (M.parties == 0)
		return -EINVAL;
	M.gen_of[s] = M.gen;
	if ((size_t)M.q.len == M.parties - 1) {
		m_release_generation();
		M.leader[s] = true;
		return 0;
	}
	fz_q_push(&M.q, s);
	return SB_PENDING;
}

static const char *describe(int s)
{
	static char buf[4][32];
	static unsigned k;
	char *b = buf[k++ & 3];
	if (fz_slots[s].st == FS_IDLE || fz_slots[s].st == FS_UNUSED)
		snprintf(b, 32, " [gen %u: %d of %zu]", M.gen, M.q.len, M.parties);
	else
		snprintf(b, 32, " [gen %u]", M.gen_of[s]);
	return b;
}

/* A cancelled wait hands nothing on: a queued one just leaves the queue (its
 * arrival withdrawn), a released one leaves its generation as it was. */
static const fz_model model = {
	.future = "wait",
	.poll_name = "sb_barrier_wait_poll",
	.ops = &sb_barrier_wait_ops,
	.size = sizeof(sb_barrier_wait),
	.queue = &M.q,
	.init = wait_init,
	.first_poll = first_poll,
	.step_end = step_end,
	.describe = describe,
};

static const fz_slot_ops slot_ops = { .model = &model };

static void op_blocking(void)
{
	fz_step_begin("wait_blocking(timeout 0) [gen %u: %d of %zu]", M.gen, M.q.len, M.parties);
	int exp;
	if (M.parties == 0) {
		exp = -EINVAL;
	} else if ((size_t)M.q.len == M.parties - 1) {
		m_release_generation();
		exp = SB_BARRIER_LEADER;
	} else {
		exp = -ETIMEDOUT; /* arrived and withdrew */
	}
	FZ_EXPECT_RES("sb_barrier_wait_blocking", exp, sb_barrier_wait_blocking(bar, 0));
	step_end();
}

static void op_destroy(uint8_t a)
{
	if (M.q.len > 0) {
		fz_step_begin("destroy() while %d wait(s) registered", M.q.len);
		FZ_EXPECT_RES("sb_barrier_destroy", -EBUSY, sb_barrier_destroy(bar));
		step_end();
		return;
	}
	fz_step_begin("destroy(), then %s(%zu)", (a & 8) ? "SB_BARRIER_INIT" : "sb_barrier_init",
		      party_choices[a % 8]);
	FZ_EXPECT_RES("sb_barrier_destroy", 0, sb_barrier_destroy(bar));
	fz_forget_slots();
	free(bar);
	new_barrier(a, a & 8);
	M.gen++; /* a new barrier: no generation shared with the old one */
	memset(M.leader, 0, sizeof M.leader);
	step_end();
}

enum {
	OP_INIT = FZ_OP_FIRST_OWN, OP_BLOCKING, OP_DESTROY, OP_CROWD,
};

static const uint8_t ops[15] = {
	OP_INIT, OP_INIT, OP_INIT, OP_POLL, OP_POLL, OP_POLL, OP_POLL, OP_CANCEL, OP_CANCEL,
	OP_BLOCKING, OP_DESTROY, OP_CROWD, OP_CROWD, OP_CANCEL_CROWD, OP_POLL_ALL,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_input in = { data, size };
	fz_reset();
	memset(&M, 0, sizeof M);
	fz_reset_slots();

	uint8_t b0 = fz_byte(&in);
	fz_step_begin("barrier %s(%zu)", (b0 & 8) ? "SB_BARRIER_INIT" : "sb_barrier_init",
		      party_choices[b0 % 8]);
	new_barrier(b0, b0 & 8);
	step_end();

	while (fz_more(&in)) {
		uint8_t op = fz_byte(&in);
		int kind = ops[op % 15];
		switch (kind) {
		case OP_INIT:
			fz_init(&model, fz_byte(&in) % FZ_NSLOTS);
			break;
		case OP_BLOCKING:
			op_blocking();
			break;
		case OP_DESTROY:
			op_destroy(fz_byte(&in));
			break;
		case OP_CROWD: {
			uint8_t k = fz_byte(&in);
			fz_crowd(&slot_ops, 1 + k % FZ_NCROWD, 0, fz_byte(&in));
			break;
		}
		default:
			fz_shared_op(&slot_ops, &in, kind);
			break;
		}
	}

	fz_cancel_all(&slot_ops);
	FZ_ASSERT_MODEL(M.q.len == 0);
	fz_step_begin("final: destroy");
	FZ_EXPECT_RES("sb_barrier_destroy", 0, sb_barrier_destroy(bar));
	free(bar);
	bar = NULL;
	return 0;
}
