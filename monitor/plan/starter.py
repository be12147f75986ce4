"""The starter plan ``medmon init`` writes: every section, commented, ready to edit.

Two tasks: a multiple-choice knowledge task scored against its key, and an open-ended one (discharge
instructions) scored by a three-judge jury, whose answers the review queue draws with known probabilities
(``oversight.review.selection: active``) so each rubric criterion is watched on the clinician scale.
"""

from typing import Any

import yaml

STARTER_PLAN = """\
# medmon monitoring plan. Validate with: medmon check plan.yaml
# Secrets are never written here: name the environment variables that hold them.
version: 1

# Step 1: the use case as approved.
use_case:
  name: Discharge medication questions
  intended_use: Answer clinicians' questions about discharge medications and doses.
  intended_users: [hospitalists, clinical pharmacists]
  workflow: Draft answers are reviewed by a pharmacist before reaching a patient.
  consequence_of_error: A wrong dose could reach a patient if review is skipped.
  risk_tier: high            # high | medium | low: sets alert severity

# Accountable people; every alert names one.
owners:
  clinical: {name: Dr. Jane Doe, email: jane.doe@hospital.example}
  technical: {name: Clinical AI Data Science, email: ai-ds@hospital.example}
  on_call_route: oncall

# The production model, over its OpenAI-compatible API.
deployment:
  name: production
  base_url: https://llm-gateway.hospital.example/v1
  model: gpt-4o-2024-08-06
  api_key_env: MEDMON_MODEL_API_KEY
  price: {input_per_mtok: 2.50, output_per_mtok: 10.00}
  timeout_s: 30
  max_concurrency: 8
  temperature: 0                    # null sends none (some reasoning models reject it)
  max_tokens: 512
  # token_limit_param: max_completion_tokens   # OpenAI's reasoning models
  # api_style: azure                           # Azure OpenAI: base_url https://NAME.openai.azure.com,
  # api_version: "2024-10-21"                  #   model = the deployment name, key sent as api-key
  # headers: {X-Team: clinical-ai}             # extra headers; secret ones from variables:
  # header_env: {X-Org-Token: MEDMON_ORG_TOKEN}
  # cost_header: x-litellm-response-cost       # a gateway's own cost, trusted over the price table
  # expected_models: [gpt-4o-2024-08-06]       # every backend a pool may answer with (no change)

# Steps 2-4: each clinical task, its MedHELM benchmark, canaries, baseline and thresholds.
tasks:
  - id: knowledge-qa
    benchmark: med_qa                 # MedHELM benchmark name; category is looked up
    canaries: {pack: clinical_knowledge_mcq}   # or {path: my_canaries.jsonl}
    schedule: 1h                      # an interval (15m, 1h, 1d) or a cron expression
    sample_size: 20
    baseline: {value: 0.85, n: 1273}  # or import HELM output: medmon baseline import
    thresholds:
      min_score: 0.75                 # approval minimum
      tolerated_drop: 0.05
      cost_budget_per_call: 0.01      # dollars
      latency_slo_s: 10
    owner: {name: Dr. Jane Doe, email: jane.doe@hospital.example}   # accountable for this task
    human_review_required: true       # a pharmacist reviews every draft (see governance.controls)
    subgroups: [age_band, sex]
  # An open-ended task the jury (below) scores: discharge instructions rewritten for the patient. Its
  # answers are also rated by clinicians (oversight.review), and because the queue draws them with a
  # known probability (selection: active) each rubric criterion gets a clinician-scale stream: the
  # jury's scores rectified by the clinicians' ratings (docs: Human oversight).
  - id: discharge-instructions
    benchmark: starr_patient_instructions   # MedHELM's PatientInstruct; scored by the jury
    canaries: {pack: discharge_instructions}
    schedule: 1h
    sample_size: 10                   # x 3 judges = 30 judge calls an hour
    baseline: {value: 0.80, n: 500}   # the jury's 0-1 score before go-live: replace with your own run
    thresholds:
      min_score: 0.70
      tolerated_drop: 0.05
      cost_budget_per_call: 0.02
      latency_slo_s: 20
    owner: {name: Dr. Jane Doe, email: jane.doe@hospital.example}
    human_review_required: true
    subgroups: [age_band, sex]

# The LLM jury for open-ended tasks (MedHELM's rubric: accuracy, completeness, clarity, 1-5). Three
# judges through the same gateway here; name other endpoints and key variables as yours require.
jury:
  judges:
    - {name: judge-a, base_url: https://llm-gateway.hospital.example/v1, model: gpt-4o-2024-08-06,
       api_key_env: MEDMON_MODEL_API_KEY, price: {input_per_mtok: 2.50, output_per_mtok: 10.00}}
    - {name: judge-b, base_url: https://llm-gateway.hospital.example/v1, model: claude-3-7-sonnet-20250219,
       api_key_env: MEDMON_MODEL_API_KEY, price: {input_per_mtok: 3.00, output_per_mtok: 15.00}}
    - {name: judge-c, base_url: https://llm-gateway.hospital.example/v1, model: llama-3.3-70b-instruct,
       api_key_env: MEDMON_MODEL_API_KEY, price: {input_per_mtok: 0.90, output_per_mtok: 0.90}}
  criteria: [accuracy, completeness, clarity]
  scale_min: 1
  scale_max: 5

# Step 5: where alerts go.
alerts:
  routes:
    - {name: oncall, type: webhook, url_env: MEDMON_WEBHOOK_URL, secret_env: MEDMON_WEBHOOK_SECRET}
  repeat_interval: 4h
  dashboard_url: http://127.0.0.1:8501
  correlation_window: 72h   # what opens on any task this long after a model change is its child: one page

detection:
  probes_between_false_alarms: 200000   # the false-alarm budget for the whole deployment
  reference: {repeats: 5, max_repeats: 160}   # go-live: each canary replayed 5 times, growing to 160 while quiet

# While a detector's evidence builds (a stream "watching", no alarm yet) probe that task every
# 15 minutes instead of on its schedule, within a budget per task and UTC day; back to the
# schedule when the evidence fades or the budget is spent. The false-alarm promise holds per probe.
adaptive_cadence:
  enabled: true
  fastest_interval: 15m
  max_extra_probes_per_day: 48          # at most 16 hours of 15-minute probing a day
  max_extra_cost_per_day: 5.00          # dollars per task (20 canaries x $0.01 budget = $0.20 a probe)

storage:
  url: sqlite:///medmon.db              # MEDMON_DATABASE_URL overrides; PostgreSQL in production

# The governance record (steps 2-5). 'medmon check' refuses a task without an owner, an
# approval threshold (thresholds.min_score) or a baseline, and probes rarer than the risk
# tier allows. 'medmon report plan.yaml --plan-document' prints this plan for the committee.
governance:
  medhelm:                              # step 2, as approved; checked against the tasks
    categories: [Clinical Decision Support, Patient Communication and Education]
    subcategories: [Providing Clinical Knowledge Support, Delivering Personalized Care Instructions]
    benchmarks: [med_qa, starr_patient_instructions]
  evidence:                             # step 3
    summary: MedQA accuracy of the deployed model from the MedHELM leaderboard.
    sources:
      - {benchmark: med_qa, source: "MedHELM leaderboard (replace with your run)", metric: exact_match,
         value: 0.85, n: 1273, data_access: public}
    limitations:
      - Licensing-exam questions do not cover discharge-specific dosing; local validation covers the gap.
  local_validation:                     # step 4 (thresholds are on each task)
    description: 200 pharmacist-written discharge medication questions with reference answers.
    n: 200
    result: "0.81 accuracy (95% CI 0.75-0.86)"
    completed_on: 2026-09-30
    thresholds_rationale: The approval minimum sits below the local result's lower bound.
  controls:                             # step 5
    decision_criteria: Go-live and continued use need every task at or above its approval minimum.
    human_review: A clinical pharmacist verifies every draft before it reaches a patient.
    max_probe_interval: {high: 1h, medium: 1d, low: 7d}   # longest gap between probes by risk tier
    reevaluation: {on_detected_change: true, repeats: 1}  # replay every canary after a change
    escalation: Unacknowledged critical alerts go to the CMIO after 4 hours.
  approval:
    approved_by: {name: Dr. Jane Doe, email: jane.doe@hospital.example}
    approved_on: 2026-10-15
    committee: Clinical AI Governance Committee

# What reaches the database: answers pass a redactor (builtin | none | module:function);
# store_text: false keeps scores but no answer text.
privacy:
  redactor: builtin
  store_text: true

# Human oversight: clinicians rate a weekly sample of stored answers on the jury's rubric, their
# agreement with the jury is watched against floors, safety events run on the Art. 73 clocks,
# and an owner can suspend the deployment through a signed webhook (see docs: Human oversight).
oversight:
  reviewers:
    - {name: Dr. Sam Lee, email: sam.lee@hospital.example, tasks: [knowledge-qa, discharge-instructions]}
  # Each answer drawn with a known probability (selection: active; larger where the judges disagree or the
  # score is near the task's null, never below min_probability), so every jury-scored task is watched on the
  # clinician scale per criterion. The stream waits for a drawn answer's rating: rate within rating_due.
  # selection: strata draws evenly across strata instead (no clinician-scale streams).
  review: {rate: 0.1, weekly_quota: 40, double_rate: 0.2, selection: active, min_probability: 0.05,
           rating_due: 7d}
  agreement: {min_icc: 0.3, max_judge_bias: 1.0}
  safety: {jurisdiction: EU, device_status: high_risk_ai, warn_before: 2d}
  # suspend: {url_env: MEDMON_SUSPEND_URL, secret_env: MEDMON_SUSPEND_SECRET}
"""


def knowledge_starter() -> dict[str, Any]:
    """The starter plan's knowledge task alone, without the jury-scored task and the jury: the one-task plan the
    detection and cadence benchmarks measure (its figures in docs/detection.md)."""
    data: dict[str, Any] = yaml.safe_load(STARTER_PLAN)
    kept = data["tasks"][0]
    data["tasks"] = [kept]
    data.pop("jury")
    for reviewer in data["oversight"]["reviewers"]:
        reviewer["tasks"] = [kept["id"]]
    medhelm = data["governance"]["medhelm"]
    for key in ("categories", "subcategories", "benchmarks"):
        medhelm[key] = medhelm[key][:1]
    return data
