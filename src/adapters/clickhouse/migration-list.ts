/**
 * The ClickHouse schema as versioned migrations, oldest first; migrations.ts applies them. Every statement is
 * idempotent (IF NOT EXISTS), so a migration interrupted half way is simply re-run. An applied migration is never
 * edited (its checksum is recorded): a change of schema is a new version at the end.
 *
 * SQL must run on ClickHouse 18.16 (Debian) and on current releases: new MergeTree syntax only; no
 * LowCardinality, DateTime64, Map, JSON type, TTL or async_insert; times are UInt64 epoch milliseconds.
 * `{db}` is replaced by the (validated) database name.
 */

export interface Migration {
  version: number;
  name: string;
  statements: string[];
}

const MONTH = (col: string) => `toYYYYMM(toDateTime(intDiv(${col}, 1000)))`;
/** Start of the UTC hour of an epoch-ms expression (explicit 'UTC': else the server's time zone). */
const HOUR_UTC = (ms: string) => `toStartOfHour(toDateTime(intDiv(${ms}, 1000), 'UTC'))`;

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'core tables',
    statements: [
      // Deduplicated by trace_id (the ORDER BY key); the partition key is a function of the row's own
      // event time, so a redelivered copy lands in the same partition and merges away.
      `CREATE TABLE IF NOT EXISTS {db}.decisions (
        trace_id String, agent_id String, tenant String, blueprint String,
        intervention String, approved UInt8, stage String, halted UInt8, severity String,
        reasons Array(String), tripwires_fired Array(String), rules_failed Array(String),
        tripwires_json String, rules_json String,
        latency_ms Float64, event_time_ms UInt64, decided_at_ms UInt64,
        hook String, tool String, session_id String, engine_version String, fallback UInt8,
        ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(ingested_at_ms)
      PARTITION BY ${MONTH('event_time_ms')}
      ORDER BY (tenant, agent_id, trace_id)`,
      `CREATE TABLE IF NOT EXISTS {db}.verdicts (
        trace_id String, agent_id String, tenant String, blueprint String,
        intervention String, approved UInt8, stage String,
        ctq Nullable(Float64), risk Nullable(Float64), confidence Float64,
        policy_violations Array(String),
        metric_names Array(String), metric_scores Array(Nullable(Float64)), metric_statuses Array(String),
        metrics_json String, verdict_json String, signature String,
        event_time_ms UInt64, scored_at_ms UInt64, ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(ingested_at_ms)
      PARTITION BY ${MONTH('event_time_ms')}
      ORDER BY (tenant, agent_id, trace_id)`,
      `CREATE TABLE IF NOT EXISTS {db}.trust_debt_events (
        event_id String, tenant String, agent_id String, ts_ms UInt64, cause String,
        before Float64, after Float64, level String, previous_level String, crossings Array(String),
        trace_id String, ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(ingested_at_ms)
      PARTITION BY ${MONTH('ts_ms')}
      ORDER BY (tenant, agent_id, ts_ms, event_id)`,
      // The ledger is an audit log: plain MergeTree so no row is ever replaced by a merge; the verifier
      // collapses exact (redelivered) copies and reports any other row claiming the same seq.
      `CREATE TABLE IF NOT EXISTS {db}.ledger (
        entry_id String, agent_id String, tenant String, seq UInt64, ts_ms UInt64, type String,
        payload String, prev_hash String, hash String, signature String, kid String, ingested_at_ms UInt64
      ) ENGINE = MergeTree()
      PARTITION BY ${MONTH('ts_ms')}
      ORDER BY (agent_id, seq)`,
      // One row per failed source record and stage: a record dead-lettered again after a redelivery is the
      // same failure. Partitioned by the source record's time, which every copy shares.
      `CREATE TABLE IF NOT EXISTS {db}.dlq_events (
        dlq_topic String, dlq_partition UInt32, dlq_offset UInt64,
        source_topic String, source_partition Int32, source_offset String, source_ts_ms UInt64, stage String,
        code String, message String, failed_at_ms UInt64, key String, value_bytes UInt64, ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(ingested_at_ms)
      PARTITION BY ${MONTH('source_ts_ms')}
      ORDER BY (source_topic, source_partition, source_offset, stage)`,
      `CREATE TABLE IF NOT EXISTS {db}.gate_events (
        trace_id String, agent_id String, tenant String, intervention String, approved UInt8,
        ts_ms UInt64, payload String, ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(ingested_at_ms)
      PARTITION BY ${MONTH('ts_ms')}
      ORDER BY (tenant, agent_id, trace_id)`,
    ],
  },
  {
    version: 2,
    name: 'deduplicated analyst views',
    // Analysts query v_*: FINAL collapses redelivered copies at read time, so counts are right before
    // background merges run (ReplacingMergeTree alone only converges eventually).
    statements: ['decisions', 'verdicts', 'trust_debt_events', 'dlq_events', 'gate_events'].map(
      (t) => `CREATE VIEW IF NOT EXISTS {db}.v_${t} AS SELECT * FROM {db}.${t} FINAL`,
    ),
  },
  {
    version: 3,
    name: 'final outcome per trace',
    // The verdict carries the final intervention (tripwires, rules and CTQ); a trace halted by a tripwire
    // never gets one, so its decision is final. Unmatched LEFT JOIN strings are '' on every version.
    statements: [
      `CREATE VIEW IF NOT EXISTS {db}.v_outcomes AS
       SELECT trace_id, agent_id, tenant, blueprint, event_time_ms, stage AS decision_stage, intervention AS decision_intervention,
              latency_ms, v_intervention, v_stage, ctq, risk,
              if(v_intervention = '', intervention, v_intervention) AS final_intervention
       FROM (SELECT trace_id, agent_id, tenant, blueprint, event_time_ms, stage, intervention, latency_ms FROM {db}.decisions FINAL)
       ANY LEFT JOIN (SELECT trace_id, intervention AS v_intervention, stage AS v_stage, ctq, risk FROM {db}.verdicts FINAL) USING trace_id`,
    ],
  },
  {
    version: 4,
    name: 'ledger entry ids',
    // The ledger writer's "already stored?" index (ledger-store.ts): keyed by (agent_id, entry_id), so the
    // per-batch lookup reads a few small granules per agent and part instead of every entry of the batch's
    // agents. Written by the writer after the entries, checked against the ledger whenever it loads a head.
    statements: [
      `CREATE TABLE IF NOT EXISTS {db}.ledger_ids (agent_id String, entry_id String, seq UInt64)
       ENGINE = ReplacingMergeTree() ORDER BY (agent_id, entry_id) SETTINGS index_granularity = 1024`,
    ],
  },
  {
    version: 5,
    name: 'finalization gate analytics',
    // docs/analytics.md "Finalization gate": one table per §9.13 event kind (gate_events keys rows by
    // trace_id, so a job's last judge result and its outcome, which share the trace, collapse there), their
    // deduplicating views, and the six dashboard panels. Optional strings are '' when absent.
    statements: [
      `CREATE TABLE IF NOT EXISTS {db}.gate_judge_results (
        event_id String, trace_id String, job_id String, agent_id String, tenant String,
        session_id String, user_id_hash String, intent_id String, capability_profile_id String, skill_id String,
        quality_score Nullable(Float64), verdict String, reason_codes Array(String), fix_mode String,
        attempt_index UInt32, action String, judged_by String, degraded UInt8, model_id String,
        token_cost Nullable(Float64), latency_ms Float64, ts_ms UInt64, ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(ingested_at_ms)
      PARTITION BY ${MONTH('ts_ms')}
      ORDER BY (tenant, agent_id, job_id, event_id)`,
      // The user_feedback re-publication has the outcome's event_id and ts_ms: it replaces the row. Version
      // feedback_at_ms (0 until feedback, then when the sink stored it), so a redelivered copy of the
      // feedback-less original never replaces the feedback.
      `CREATE TABLE IF NOT EXISTS {db}.gate_outcomes (
        event_id String, trace_id String, job_id String, agent_id String, tenant String,
        session_id String, intent_id String, final_verdict String, action String,
        num_retries UInt32, time_to_finalize_ms UInt64, user_feedback String,
        ts_ms UInt64, feedback_at_ms UInt64, ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(feedback_at_ms)
      PARTITION BY ${MONTH('ts_ms')}
      ORDER BY (tenant, agent_id, job_id, event_id)`,
      `CREATE VIEW IF NOT EXISTS {db}.v_gate_judge_results AS SELECT * FROM {db}.gate_judge_results FINAL`,
      `CREATE VIEW IF NOT EXISTS {db}.v_gate_outcomes AS SELECT * FROM {db}.gate_outcomes FINAL`,
      // One row per job that ended: its latest outcome (a later attempt's outcome supersedes an earlier one).
      `CREATE VIEW IF NOT EXISTS {db}.v_gate_jobs AS
       SELECT tenant, agent_id, job_id, argMax(o_intent, ver) AS intent_id, argMax(o_session, ver) AS session_id,
              argMax(o_verdict, ver) AS final_verdict, argMax(o_action, ver) AS action, argMax(o_retries, ver) AS num_retries,
              argMax(o_ttf, ver) AS time_to_finalize_ms, argMax(o_feedback, ver) AS user_feedback, max(o_ts) AS ended_ms
       FROM (SELECT tenant, agent_id, job_id, intent_id AS o_intent, session_id AS o_session, final_verdict AS o_verdict,
                    action AS o_action, num_retries AS o_retries, time_to_finalize_ms AS o_ttf, user_feedback AS o_feedback,
                    ts_ms AS o_ts, tuple(ts_ms, num_retries) AS ver
             FROM {db}.gate_outcomes FINAL)
       GROUP BY tenant, agent_id, job_id`,
      `CREATE VIEW IF NOT EXISTS {db}.v_gate_verdict_rate AS
       SELECT ${HOUR_UTC('ts_ms')} AS hour, intent_id, count() AS results,
              countIf(verdict = 'PASS') AS pass, countIf(verdict = 'PASS_WITH_CAVEATS') AS pass_with_caveats,
              countIf(verdict = 'FAIL') AS fail, countIf(verdict = '') AS no_verdict,
              round(pass / results, 4) AS pass_share, round(pass_with_caveats / results, 4) AS caveats_share,
              round(fail / results, 4) AS fail_share
       FROM {db}.gate_judge_results FINAL
       GROUP BY hour, intent_id`,
      `CREATE VIEW IF NOT EXISTS {db}.v_gate_reason_codes AS
       SELECT hour, intent_id, reason_code, countEqual(codes, reason_code) AS times, results,
              round(times / results, 4) AS share
       FROM (SELECT ${HOUR_UTC('ts_ms')} AS hour, intent_id, count() AS results, groupArrayArray(arrayDistinct(reason_codes)) AS codes
             FROM {db}.gate_judge_results FINAL GROUP BY hour, intent_id)
       ARRAY JOIN arrayDistinct(codes) AS reason_code`,
      // A session is (tenant, session_id), or (tenant, agent_id, job_id) for results without a session_id;
      // its hour is the hour of its first judge result under the intent.
      `CREATE VIEW IF NOT EXISTS {db}.v_gate_far_away AS
       SELECT hour, intent_id, count() AS sessions, sum(far) AS far_away_sessions,
              sum(wal) AS wrong_abstraction_sessions, sum(wat) AS wrong_artifact_sessions,
              round(far_away_sessions / sessions, 4) AS far_away_index
       FROM (SELECT intent_id, tenant, session_id, if(session_id = '', agent_id, '') AS s_agent, if(session_id = '', job_id, '') AS s_job,
                    ${HOUR_UTC('min(ts_ms)')} AS hour,
                    max(has(reason_codes, 'WRONG_ABSTRACTION_LEVEL')) AS wal, max(has(reason_codes, 'WRONG_ARTIFACT_TYPE')) AS wat,
                    max(has(reason_codes, 'WRONG_ABSTRACTION_LEVEL') OR has(reason_codes, 'WRONG_ARTIFACT_TYPE')) AS far
             FROM {db}.gate_judge_results FINAL
             GROUP BY intent_id, tenant, session_id, s_agent, s_job)
       GROUP BY hour, intent_id`,
      // Per ended job (v_gate_jobs), with its attempt-0 and attempt-1 verdicts from the judge results.
      // Replaced by migration 10 (a first-failed job is one offered a repair).
      `CREATE VIEW IF NOT EXISTS {db}.v_gate_replan_effectiveness AS
       SELECT ${HOUR_UTC('ended_ms')} AS hour, intent_id, count() AS jobs,
              sum(first_failed) AS first_failed_jobs,
              sum(first_failed AND passed_at_1) AS passed_by_attempt_1,
              sum(first_failed AND action IN ('finalize_with_limitations', 'block')) AS still_fail_after_max,
              if(first_failed_jobs = 0, NULL, round(passed_by_attempt_1 / first_failed_jobs, 4)) AS passed_by_attempt_1_share,
              if(first_failed_jobs = 0, NULL, round(still_fail_after_max / first_failed_jobs, 4)) AS still_fail_share,
              countIf(num_retries >= 1) AS repaired_jobs, countIf(num_retries >= 1 AND final_verdict = 'pass') AS repaired_passed,
              if(repaired_jobs = 0, NULL, round(repaired_passed / repaired_jobs, 4)) AS replan_success,
              sum(num_retries) AS retries, round(retries / jobs, 4) AS avg_retries
       FROM (SELECT tenant, agent_id, job_id, intent_id, action, final_verdict, num_retries, ended_ms FROM {db}.v_gate_jobs) AS j
       ANY LEFT JOIN (SELECT tenant, agent_id, job_id,
                             max(attempt_index = 0 AND verdict = 'FAIL') AS first_failed, max(attempt_index = 1 AND verdict = 'PASS') AS passed_at_1
                      FROM {db}.gate_judge_results FINAL GROUP BY tenant, agent_id, job_id) AS a
       USING (tenant, agent_id, job_id)
       GROUP BY hour, intent_id`,
      // The kind of repair the judge asked for, over results that needed one (FAIL, PASS_WITH_CAVEATS).
      `CREATE VIEW IF NOT EXISTS {db}.v_gate_fix_modes AS
       SELECT ${HOUR_UTC('ts_ms')} AS hour, intent_id, count() AS repairs,
              countIf(fix_mode = 'REWRITE_ONLY') AS rewrite_only, countIf(fix_mode = 'NEEDS_NEW_EVIDENCE') AS needs_new_evidence,
              countIf(fix_mode = 'NEEDS_USER_CLARIFICATION') AS needs_user_clarification,
              round(rewrite_only / repairs, 4) AS rewrite_only_share, round(needs_new_evidence / repairs, 4) AS needs_new_evidence_share,
              round(needs_user_clarification / repairs, 4) AS needs_user_clarification_share
       FROM {db}.gate_judge_results FINAL
       WHERE verdict IN ('FAIL', 'PASS_WITH_CAVEATS') AND fix_mode != ''
       GROUP BY hour, intent_id`,
      // Judge calls are results judged by the LLM; retries are results with attempt_index >= 1. Token cost is
      // NULL when no result of the group reported one (sumIf of NULLs is 0 on 18.16, NULL on current releases).
      `CREATE VIEW IF NOT EXISTS {db}.v_gate_cost AS
       SELECT ${HOUR_UTC('ts_ms')} AS hour, intent_id, count() AS results,
              countIf(attempt_index >= 1) AS retries,
              countIf(judged_by = 'llm') AS judge_calls, countIf(judged_by = 'llm' AND attempt_index >= 1) AS extra_judge_calls,
              if(judge_calls = 0, NULL, round(sumIf(latency_ms, judged_by = 'llm') / judge_calls, 3)) AS avg_latency_ms,
              if(judge_calls = 0, NULL, round(quantileExactIf(0.95)(latency_ms, judged_by = 'llm'), 3)) AS p95_latency_ms,
              round(sumIf(latency_ms, judged_by = 'llm' AND attempt_index >= 1), 3) AS extra_latency_ms,
              if(countIf(isNotNull(token_cost)) = 0, NULL, round(sum(ifNull(token_cost, 0)), 6)) AS token_cost_total,
              if(countIf(isNotNull(token_cost) AND attempt_index >= 1) = 0, NULL, round(sumIf(ifNull(token_cost, 0), attempt_index >= 1), 6)) AS extra_token_cost
       FROM {db}.gate_judge_results FINAL
       GROUP BY hour, intent_id`,
    ],
  },
  {
    version: 6,
    name: 'ACM run analytics',
    // docs/analytics.md "ACM runs": views over the signed ledger's entries of ACM runs (docs/acm.md "In the
    // stream"): one row per entry (redelivered copies collapsed), the runs, plans chosen, branches, policy
    // decisions and verification failures. Payload fields are read with visitParamExtract* (18.16 has no JSONExtract).
    statements: [
      `CREATE VIEW IF NOT EXISTS {db}.v_acm_entries AS
       SELECT agent_id, tenant, entry_id, e_type AS type, e_ts_ms AS ts_ms, e_payload AS payload,
              visitParamExtractString(e_payload, 'run_id') AS run_id, visitParamExtractString(e_payload, 'trace_id') AS trace_id
       FROM (SELECT agent_id, tenant, entry_id, any(type) AS e_type, any(ts_ms) AS e_ts_ms, any(payload) AS e_payload FROM {db}.ledger
             WHERE type IN ('POLICY_DECISION', 'PLAN_SELECTED', 'BRANCH_TAKEN', 'REPLAN_TRIGGERED', 'COMPENSATION_APPLIED', 'GOAL_AMENDED')
             GROUP BY agent_id, tenant, entry_id)
       WHERE run_id != ''`,
      `CREATE VIEW IF NOT EXISTS {db}.v_acm_plans AS
       SELECT tenant, run_id, agent_id, ts_ms, trace_id, visitParamExtractString(payload, 'goal_id') AS goal_id, visitParamExtractString(payload, 'plan_id') AS plan_id,
              visitParamExtractString(payload, 'method') AS method, visitParamExtractString(payload, 'plan_digest') AS plan_digest
       FROM {db}.v_acm_entries WHERE type = 'PLAN_SELECTED'`,
      `CREATE VIEW IF NOT EXISTS {db}.v_acm_branches AS
       SELECT tenant, run_id, agent_id, ts_ms, trace_id, visitParamExtractString(payload, 'plan_id') AS plan_id, visitParamExtractString(payload, 'from') AS from_task,
              visitParamExtractString(payload, 'to') AS to_task, visitParamExtractBool(payload, 'allowed') AS allowed, visitParamExtractString(payload, 'intervention') AS intervention
       FROM {db}.v_acm_entries WHERE type = 'BRANCH_TAKEN'`,
      `CREATE VIEW IF NOT EXISTS {db}.v_acm_policy_decisions AS
       SELECT tenant, run_id, agent_id, ts_ms, trace_id, visitParamExtractString(payload, 'hook') AS hook, visitParamExtractString(payload, 'task_id') AS task_id,
              visitParamExtractString(payload, 'blueprint') AS blueprint, visitParamExtractString(payload, 'intervention') AS intervention,
              visitParamExtractRaw(payload, 'codes') AS acm_codes
       FROM {db}.v_acm_entries WHERE type = 'POLICY_DECISION'`,
      `CREATE VIEW IF NOT EXISTS {db}.v_acm_verification_failures AS
       SELECT * FROM {db}.v_acm_policy_decisions WHERE position(acm_codes, 'STEWARD_ACM_VERIFICATION_') > 0`,
      `CREATE VIEW IF NOT EXISTS {db}.v_acm_runs AS
       SELECT tenant, run_id, argMin(agent_id, ts_ms) AS agent_id, min(ts_ms) AS first_ms, max(ts_ms) AS last_ms,
              countIf(type = 'POLICY_DECISION') AS decisions,
              countIf(type = 'POLICY_DECISION' AND visitParamExtractString(payload, 'intervention') IN ('block', 'halt')) AS blocked,
              argMaxIf(visitParamExtractString(payload, 'plan_id'), ts_ms, type = 'PLAN_SELECTED') AS plan_id,
              countIf(type = 'REPLAN_TRIGGERED') AS replans,
              countIf(type = 'BRANCH_TAKEN') AS branches,
              countIf(type = 'BRANCH_TAKEN' AND visitParamExtractBool(payload, 'allowed') = 0) AS forbidden_branches,
              countIf(type = 'POLICY_DECISION' AND position(visitParamExtractRaw(payload, 'codes'), 'STEWARD_ACM_VERIFICATION_') > 0) AS verification_failures,
              countIf(type = 'COMPENSATION_APPLIED') AS compensations
       FROM {db}.v_acm_entries
       GROUP BY tenant, run_id`,
    ],
  },
  {
    version: 7,
    name: 'ACM run chains and run records',
    // spec-decisions D30: a run's ledger entries chained per run (and agent) from their own genesis, next to the
    // agent's chain in `ledger`: what a replay bundle holds. Same audit-log rules as `ledger` (plain MergeTree),
    // and the same "already stored?" index beside it (ledger-store.ts RUN_CHAINS).
    statements: [
      `CREATE TABLE IF NOT EXISTS {db}.acm_ledger (
        entry_id String, agent_id String, tenant String, seq UInt64, ts_ms UInt64, type String,
        payload String, prev_hash String, hash String, signature String, kid String, ingested_at_ms UInt64,
        run_id String
      ) ENGINE = MergeTree()
      PARTITION BY ${MONTH('ts_ms')}
      ORDER BY (tenant, run_id, agent_id, seq)`,
      `CREATE TABLE IF NOT EXISTS {db}.acm_ledger_ids (tenant String, run_id String, agent_id String, entry_id String, seq UInt64)
       ENGINE = ReplacingMergeTree() ORDER BY (tenant, run_id, agent_id, entry_id) SETTINGS index_granularity = 1024`,
      // A run's records as a replay bundle holds them (replay-source.ts): the trace as received, the PDP request and
      // response lines (the exact bytes their signed POLICY_DECISION digests), the context versions; `seq` is the
      // trace's line in the run (requests and responses: their record seq; contexts: arrival order).
      `CREATE TABLE IF NOT EXISTS {db}.acm_run_records (
        tenant String, run_id String, kind String, seq UInt64, agent_id String, trace_id String, line String,
        ts_ms UInt64, ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(ingested_at_ms)
      PARTITION BY ${MONTH('ts_ms')}
      ORDER BY (tenant, run_id, kind, seq)`,
    ],
  },
  {
    version: 8,
    name: 'blueprint rollout, shadow diffs, review queue',
    // docs/rollout.md (issue #26, spec-decisions D25). 18.16 has no ALTER ... IF NOT EXISTS: migrate() treats
    // "column already exists" on an ADD COLUMN as done, so a re-run after an interruption passes. A view
    // over `SELECT *` keeps the columns it was created with on 18.16, so v_decisions is created again.
    statements: [
      `ALTER TABLE {db}.decisions ADD COLUMN blueprint_version String DEFAULT '' AFTER fallback,
       ADD COLUMN rollout_arm String DEFAULT '' AFTER blueprint_version`,
      `DROP TABLE IF EXISTS {db}.v_decisions`,
      `CREATE VIEW IF NOT EXISTS {db}.v_decisions AS SELECT * FROM {db}.decisions FINAL`,
      // One row per queued verdict; take/resolve publish the same review_id with a later updated_at_ms.
      `CREATE TABLE IF NOT EXISTS {db}.review_queue (
        review_id String, trace_id String, agent_id String, tenant String,
        blueprint String, blueprint_version String, rollout_arm String,
        intervention String, confidence Float64, threshold Float64, ctq Nullable(Float64), risk Nullable(Float64),
        reasons Array(String), status String, outcome String, reviewer String, note String,
        event_time_ms UInt64, enqueued_at_ms UInt64, sla_due_ms UInt64, taken_at_ms UInt64, resolved_at_ms UInt64,
        updated_at_ms UInt64, ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(updated_at_ms)
      PARTITION BY ${MONTH('enqueued_at_ms')}
      ORDER BY (tenant, agent_id, review_id)`,
      `CREATE VIEW IF NOT EXISTS {db}.v_review_queue AS SELECT * FROM {db}.review_queue FINAL`,
      // One row per trace, pipeline stage and shadow set: a redelivered evaluation is the same diff.
      `CREATE TABLE IF NOT EXISTS {db}.shadow_diffs (
        shadow_id String, trace_id String, agent_id String, tenant String, pipeline_stage String,
        active_blueprint String, shadow_blueprint String,
        active_intervention String, shadow_intervention String, active_stage String, shadow_stage String,
        changed UInt8, change_kinds Array(String),
        active_tripwires_fired Array(String), shadow_tripwires_fired Array(String),
        active_rules_failed Array(String), shadow_rules_failed Array(String),
        ctq_delta Nullable(Float64), diff_json String,
        event_time_ms UInt64, evaluated_at_ms UInt64, ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(ingested_at_ms)
      PARTITION BY ${MONTH('event_time_ms')}
      ORDER BY (tenant, shadow_id, pipeline_stage, trace_id)`,
      `CREATE VIEW IF NOT EXISTS {db}.v_shadow_diffs AS SELECT * FROM {db}.shadow_diffs FINAL`,
      `CREATE TABLE IF NOT EXISTS {db}.rollout_events (
        event_id String, blueprint String, kind String, stable_version String, canary_version String,
        from_percent Float64, to_percent Float64, trigger_id String, metric String,
        canary_value Float64, stable_value Float64, reason String, actor String, ts_ms UInt64, ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(ingested_at_ms)
      PARTITION BY ${MONTH('ts_ms')}
      ORDER BY (blueprint, ts_ms, event_id)`,
    ],
  },
  {
    version: 9,
    name: 'approvals',
    // docs/approvals.md (issue #25): one row per approval, pending when requested, replaced by its outcome
    // (a later updated_ms). The ledger holds the same outcomes as POLICY_DECISION entries (ap:<id>).
    statements: [
      `CREATE TABLE IF NOT EXISTS {db}.approvals (
        approval_id String, agent_id String, tenant String, agent_tier String, tool String, trace_id String,
        job_id String, skill_id String, role String, status String, decision String, default_action String,
        approver String, via String, reason String,
        requested_ms UInt64, deadline_ms UInt64, decided_ms UInt64, updated_ms UInt64, ingested_at_ms UInt64
      ) ENGINE = ReplacingMergeTree(updated_ms)
      PARTITION BY ${MONTH('requested_ms')}
      ORDER BY (tenant, agent_id, approval_id)`,
      `CREATE VIEW IF NOT EXISTS {db}.v_approvals AS SELECT * FROM {db}.approvals FINAL`,
    ],
  },
  {
    version: 10,
    name: 'gate replan effectiveness: first-failed jobs are those offered a repair',
    // docs/analytics.md "Replan effectiveness" (issue #20, audit round 4): migration 5's view counted a job that
    // failed attempt 0 without being offered a repair (a tier-1 block, an anti-loop ending at max_retries 0) as
    // first-failed and "still FAIL after max retries", though it had no retry. Now a first-failed job is one whose
    // attempt-0 FAIL got a repair action. Dropped and created again (a re-run after an interruption does the same).
    statements: [
      `DROP TABLE IF EXISTS {db}.v_gate_replan_effectiveness`,
      `CREATE VIEW IF NOT EXISTS {db}.v_gate_replan_effectiveness AS
       SELECT ${HOUR_UTC('ended_ms')} AS hour, intent_id, count() AS jobs,
              sum(first_failed) AS first_failed_jobs,
              sum(first_failed AND passed_at_1) AS passed_by_attempt_1,
              sum(first_failed AND action IN ('finalize_with_limitations', 'block')) AS still_fail_after_max,
              if(first_failed_jobs = 0, NULL, round(passed_by_attempt_1 / first_failed_jobs, 4)) AS passed_by_attempt_1_share,
              if(first_failed_jobs = 0, NULL, round(still_fail_after_max / first_failed_jobs, 4)) AS still_fail_share,
              countIf(num_retries >= 1) AS repaired_jobs, countIf(num_retries >= 1 AND final_verdict = 'pass') AS repaired_passed,
              if(repaired_jobs = 0, NULL, round(repaired_passed / repaired_jobs, 4)) AS replan_success,
              sum(num_retries) AS retries, round(retries / jobs, 4) AS avg_retries
       FROM (SELECT tenant, agent_id, job_id, intent_id, action, final_verdict, num_retries, ended_ms FROM {db}.v_gate_jobs) AS j
       ANY LEFT JOIN (SELECT tenant, agent_id, job_id,
                             max(attempt_index = 0 AND verdict = 'FAIL' AND action IN ('rewrite', 'replan', 'ask_user')) AS first_failed,
                             max(attempt_index = 1 AND verdict = 'PASS') AS passed_at_1
                      FROM {db}.gate_judge_results FINAL GROUP BY tenant, agent_id, job_id) AS a
       USING (tenant, agent_id, job_id)
       GROUP BY hour, intent_id`,
    ],
  },
];
