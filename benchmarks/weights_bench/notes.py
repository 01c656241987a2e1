"""The measured notes that ``bench_weights.py report`` writes below the tables of weights.md."""

CLASSIFICATION_NOTES = """
#### Satimage: why the Mondrian forest trails the random forest (2026-11-23)

- **Target (within 1 point of RF, seed 0): missed, and nothing principled reaches it.** MF-auto
  0.9005 against RF 0.9150 (-1.45); no classifier change was kept, so the MF-auto rows above
  are the mechanism of the previous report re-run (same seeds: identical seed-0 figures; plain
  MF moved with code merged since, usps 0.9292 -> 0.9248, dna 0.6644 -> 0.6695). RF's
  seed 0 is its best of 5 seeds (0.9055-0.9150, mean 0.9093): over seeds 0-4 the gap is -0.87
  points with weights and -0.94 without, within 1 point on average but not at seed 0.
- **The gap is in the cuts, not in the smoothing.** The same partitions with random-forest
  leaves (each tree votes the training label frequencies of the test point's leaf: no HNSP, no
  branching off) score like the HNSP predictions (0.902 vs 0.901 at seed 0, table above); the
  HNSP discount (gamma = 1-100 x D, default 10 D) and strict IKN counts move accuracy by at most
  0.15 points. Extra trees choosing the cut's feature without the labels (max_features=1)
  score like MF (0.894-0.9005), and 0.9035 with a choice between 2 random features: the random
  forest and extra trees win by a label-aware choice of the feature *at every node*. Fixed
  per-feature weights only reweight that choice globally; satimage's 36 features (4 bands x 9
  pixels) are all similarly relevant (extra-trees relevances 0.19-1 of the largest).
- **Everything tried (seed 0 unless said; test-level rows are fixed settings read on the test
  rows for the diagnosis, not choices):** a finite lifetime (lifetime="auto" on validation)
  0.890; 300 trees 0.900 (0.9045 with r^0.5); fixed powers r^0.25..r^4 0.8875-0.9050; r^0.25
  looks best in the table above (relevance of each seed) but not with the relevance of seed 0
  kept for forest seeds 0-4 (means: p=0 0.8999, 0.25 0.9006, 0.5 0.9018, 0.75 0.9032, 1
  0.8997): its gain depends on the relevance draw; the quantile map with r^0, r^0.5, r^1
  0.9015, 0.903, 0.9035 (300 trees: 0.8985-0.9005). Other relevance methods (rows MF-gp_ard,
  -mutual_info, -permutation, run of 2026-11-22): 0.891-0.9015.
- **The choice is noise-limited.** The differences between powers (0.3-0.5 points on 2000 test
  rows) are below what an 887-row validation part resolves. Choice variants, 5 seeds (mean
  accuracy; usps 4 seeds): probes of 100 trees instead of 20 (a probe the size of the final
  forest) satimage 0.9016, dna 0.9305, letter 0.9687, usps 0.9255 against 0.9006, 0.9304,
  0.9675, 0.9246 (+0.1 points each, at 2-2.5x the search cost: usps 16 s against 6 s, RF 2.2
  s; seed 0 satimage 0.903 but usps 0.9248 against 0.9312, so "usps not worse" would fail);
  100-tree probes scored by the validation log-loss instead of accuracy: satimage 0.9027 but
  letter 0.9649 and usps 0.9186 (3 seeds, against 0.9266: the log-loss prefers r^2 and the
  quantile map on usps, which cost accuracy); 5-fold cross-validation with 100-tree probes
  (seeds 0, 3, 4: 0.9045, 0.9025, 0.904 with the log-loss) no better than the hold-out; a finer
  power grid (0, 0.25, 0.5, 0.75, 1, 1.5, 2; 20-tree probes): satimage 0.9002 (seed 0 picks
  r^0.25 of the fit part's relevance: 0.8985), letter 0.9692, usps 0.9254, dna unchanged
  (5 seeds; 0.25 added alone: satimage 0.9002, letter 0.9675). None is clearly better
  everywhere: not kept.
- **What would close it: an oblique, label-aware map.** Appending the training data's (shrunk)
  LDA directions to the features, a fixed linear map chosen on the training rows only, gives
  MF 0.906, 0.9085, 0.9045 on seeds 0-2 (mean 0.9063, -0.30 points against RF on the same
  seeds; MF-auto on it 0.905 at seed 0) and dna MF-auto 0.9477, 0.9401, 0.9435 (+1.0 point
  over MF-auto); letter 0.969, 0.9638, 0.9688 with MF-auto (0.9654, 0.9646, 0.9700 without),
  usps 0.9248, 0.9223, 0.9302 (0.9312, 0.9263, 0.9223 without): it needs its own validation
  rule. It keeps every Mondrian
  property (a fixed map) but is not per feature: the feature map, the stored points and the
  importances would need a map with more outputs than inputs. Gated like the weights (a
  hold-out of 20% carved from the training rows, LDA fitted on the fit part, MF-auto on each
  map, kept when it beats the plain map by one paired standard error; refitted on all rows):
  dna takes it on seeds 0-2 (0.9477, 0.9401, 0.9435), letter and usps reject it on every seed
  (unchanged: no regression), satimage takes it on seeds 1-2 (0.9085, 0.9045) but rejects it
  at seed 0 (0.9005; validation 0.920 plain vs 0.913 oblique), so even this misses the seed-0
  target. Not implemented here (outside the weights mechanism: feature_map.py, the store, the
  importances); a candidate for a follow-up issue.
- **The same on the other sets** (tables above, seeds 0-2): on all four the Mondrian forest
  scores about like extra trees that choose the cut's feature without the labels (dna 0.668
  vs 0.695, letter 0.962 vs 0.956, usps 0.924 vs 0.918, satimage 0.899 vs 0.897); the
  random-forest leaf votes on its partition move it by at most 0.15 points except on dna
  (+2.0, where the weights add 26); the discount (1-100 D) and strict IKN gain at most 0.17
  points anywhere (a smaller discount loses up to 0.67 on dna): a Mondrian forest is about as
  good as a label-blind partition gets, and what the weights cannot supply is the per-node
  label-aware choice.
- Reproduce: `bench_weights.py classification --seeds 5` and `bench_weights.py diagnose
  --seeds 3 --datasets satimage,dna,letter,usps` (the LDA rows need only scikit-learn).
"""


NOTES = """
### Noise floor and the regression search (2026-11-23, session 7): "auto" is the joint search

What changed. (1) The regressor's predictive noise is floored by the duplicated inputs of the
stored points: the one-sided 95% chi-square lower bound of their pooled within-group variance
(`_duplicate_noise_floor`; the user guide, "The regressor"), in the held-out scoring too. Only
concrete (19 groups, floor 0.077 var(y)) and protein (1227 groups, 0.018 var(y)) have
duplicated inputs with different targets; power_plant and wine_red have duplicates with equal
targets only (floor 0), the others none (bit-identical). (2) From it, the regressor's
`feature_weights="auto"` is the joint search of session 6 (rows MF-auto_joint: every power
under both maps, the simplest candidate within one paired standard error, `laplace_ard`
competing from 2000 rows).

Reproduce (shared 2-core machine, one job at a time):

    cd benchmarks
    OMP_NUM_THREADS=1 nice python bench_weights.py regression --splits 3 \\
        --datasets power_plant,kin8nm,naval,concrete,energy,wine_red,yacht \\
        --methods auto,auto_joint,auto_joint10 --models RF,MF,MF-auto,MF-auto_joint,MF-auto_joint10
    OMP_NUM_THREADS=1 nice python bench_weights.py regression --splits 1 --datasets protein \\
        --methods auto,auto_joint,auto_joint10 --models RF,MF,MF-auto,MF-auto_joint,MF-auto_joint10
    # after the default switch (MF-auto = the joint search; RF re-run interleaved):
    OMP_NUM_THREADS=1 nice python bench_weights.py regression --splits 3 \\
        --datasets power_plant,kin8nm,naval,concrete,energy,wine_red,yacht --models RF,MF-auto
    OMP_NUM_THREADS=1 nice python bench_weights.py regression --splits 1 --datasets protein \\
        --models RF,MF-auto
    python bench_weights.py report

The first two commands ran with the floor, before the switch: their MF-auto rows are the
previous search (the power under the min-max map, then the quantile map at that power), now
overwritten in the tables above by the third and fourth commands (MF-auto there equals the
MF-auto_joint rows to the bit: same RMSE and NLL on all 22 splits; fit ratios against that
run's RF). The MF, MF-auto_joint and MF-auto_joint10 rows of the tables are from the first two
commands, their fit ratios against the RF of the last two (RMSE and NLL are deterministic);
the ET and HGB rows are older runs (no floor involved), their ratios against that RF too. Per
set, the first two commands (interleaved per split: RF, MF, MF-auto before the switch, joint
with 20-tree probes, joint with 10): RMSE / RF, NLL - RF, fit / RF.

| dataset | MF-auto (previous search) | MF-auto_joint (now "auto") | MF-auto_joint10 |
|---|---|---|---|
| power_plant | 1.025, +0.071, 1.33 | 1.035, +0.086, 2.50 | 1.035, +0.086, 2.32 |
| kin8nm | 1.067, +0.050, 0.78 | 0.999, +0.005, 1.46 | 1.008, +0.013, 1.18 |
| naval | 1.092, -0.765, 0.62 | 1.032, -0.903, 1.39 | 1.032, -0.903, 1.23 |
| concrete | 1.209, +0.216, 0.99 | 1.038, +0.119, 1.19 | 1.083, +0.137, 1.20 |
| energy | 1.019, -0.399, 1.46 | 1.019, -0.399, 1.71 | 1.019, -0.399, 1.55 |
| wine_red | 0.989, -1.709, 0.84 | 0.992, -1.696, 0.98 | 0.992, -1.696, 0.79 |
| yacht | 1.394, -0.827, 1.10 | 1.281, -0.878, 1.33 | 1.281, -0.878, 1.22 |
| protein | 1.031, +0.057, 0.50 | 1.026, +0.053, 1.08 | 1.027, +0.055, 0.79 |
| **mean** | **1.103, 4 of 8 better, 0.95** | **1.053, 4 of 8, 1.45** | **1.060, 4 of 8, 1.28** |

- **Fit budget.** The joint search's mean fit / RF is 1.45, 1.42 and 1.42 in three
  interleaved runs (the run above; the same commands run earlier with the floor on the
  posteriors too; the run after the switch, per set 2.27 power_plant, 1.50 kin8nm, 1.35
  naval, 1.26 concrete, 1.60 energy, 0.93 wine_red, 1.36 yacht, 1.13 protein), against
  2.44-2.65 in session 6: the held-out choice got about 4 times faster since. Under the budget
  of 2 on average (power_plant alone is above: the Laplace lifetimes on 2000 rows and 16
  probes of a set whose search keeps p = 0 or 0.5).
- **Accuracy.** Mean RMSE / RF 1.103 -> 1.053 (kin8nm 1.067 -> 0.999, naval 1.092 -> 1.032,
  concrete 1.209 -> 1.038, yacht 1.394 -> 1.281; power_plant 1.025 -> 1.035 and wine_red
  0.989 -> 0.992 lose a little, as in session 6). NLL better than RF on the same 4 of 8 sets
  (naval, energy, wine_red, yacht); the other gaps narrow (kin8nm +0.050 -> +0.005, concrete
  +0.216 -> +0.119) but power_plant widens (+0.071 -> +0.086). 10-tree probes: 1.060 at 1.28;
  the 20-tree probes were kept (better on concrete and kin8nm, both within the budget).
- **The concrete blow-up is gone.** Session 6's joint search chose noise 0.0014 (var(y) about
  280) on concrete split 0 and scored NLL 316 there (mean +104 nats over RF); with the floor
  (21.3 on that split) it scores 3.15 and the set +0.119. Flooring the posteriors' noise too
  (so the means change; measured first, rejected) fixed the NLL as well but cost concrete RMSE:
  joint 1.102 -> 1.200 of RF (split 2: 4.35 -> 5.00), MF-auto 1.287 -> 1.346, protein joint
  1.039 -> 1.063 (NLL +0.063 -> +0.158); the predictive floor alone gives concrete 1.038 and
  protein 1.026 (+0.053): with the floor in the scoring the held-out choice no longer chases
  the duplicated validation rows, and picks better rates and scales.
- Plain MF (no weights) changed with the floor on concrete (1.615 -> 1.540 of RF) and protein
  (1.079 -> 1.051); its mean fit / RF is 0.37-0.40 now (0.95 in session 6; faster kernels).
- The online table above was re-run (`bench_weights.py online --datasets concrete,energy,yacht
  --splits 3`): concrete without weights, online NLL 6.801 -> 3.458 (its stream's re-choices
  had chased the duplicated rows too); with "auto", energy 0.961 -> 0.666 and yacht 1.370 ->
  1.182, concrete 3.228 -> 3.284 (RMSE 6.70 -> 6.95 online against 4.91 batch: a stream
  chooses its weights on its first 256 rows, the batch on all of them).

### Predictive variance family (2026-11-23, session 7): wider families measured, none kept

Question: can a wider family of the regressor's predictive variance, chosen on the held-out part
exactly like `c` and `d` (no test rows), flip at least two of kin8nm, protein, power_plant and
concrete (NLL behind RF) without losing naval, energy, wine_red or yacht, the means unchanged?
Measured on the model as it is (`benchmarks/diag_variance_family.py`): one
`MondrianForestRegressor(100, feature_weights="auto", random_state=0)` fit per split, the
held-out moments of its calibration captured (one per variance scale `c`), the choice re-made
on them within each family, the test rows scored with the fitted forest (no refit, so every
mean and RMSE is the model's to the bit; the "base" column reproduces the tables above on all 22
splits). Families, all `c W + d B + e` with `c` on the model's grid (1/8 to 4): base (`d` in
{0, 1/64 .. 1}, `e = 0`); (a) `d` up to 4 or 8 (same doubling); (b) a homoscedastic term `e`
(fraction of var(y): {0, 1/256 .. 1/8} by 2 or 1/1024 .. 1/4 by 2, "e fine"); (c) both. Two
columns peek at the test rows, for diagnosis only (upper bounds of what any held-out choice
of the family can reach): "oracle", the test-optimal `c` of the grid with `d` in {0, 1/64 ..
16} and `e` in {0, 1/4096 .. 1/4} (21 values each); "wide", the same with `W` scaled
linearly from `c = 0` to 4 (below the duplicated-inputs noise floor, and `W = 0`: RF's own shape
`d B + e`). NLL - RF (RF rows of `weights_regression.jsonl`, deterministic),
mean over splits (RMSE/RF: the model's, unchanged by any column):

|set|splits|RMSE/RF|base|(a) d<=4|(a) d<=8|(b) e|(b) e fine|(c) d<=4,e|(c) d<=8,e|oracle|wide|
|---|---|---|---|---|---|---|---|---|---|---|---|
|concrete|3|1.038|+0.119|+0.119|+0.119|+0.119|+0.119|+0.119|+0.119|+0.091|-0.021|
|kin8nm|3|0.999|+0.005|+0.005|+0.005|+0.005|+0.005|+0.005|+0.005|-0.003|-0.005|
|power_plant|3|1.035|+0.086|+0.094|+0.094|+0.086|+0.067|+0.094|+0.094|+0.033|+0.027|
|protein|1|1.026|+0.053|+0.053|+0.053|+0.053|+0.053|+0.053|+0.053|+0.050|+0.044|
|naval|3|1.032|-0.903|-0.903|-0.903|-0.903|-0.903|-0.903|-0.903|-0.947|-0.952|
|energy|3|1.019|-0.399|-0.336|-0.294|-0.399|-0.399|-0.336|-0.294|-0.433|-0.434|
|wine_red|3|0.992|-1.696|-1.850|-1.962|-1.696|-1.696|-1.850|-1.962|-1.973|-3.239|
|yacht|3|1.281|-0.878|-1.077|-1.068|-0.878|-0.878|-1.077|-1.068|-1.184|-1.367|

- **No family flips a set; none was kept** (the code is unchanged). `d` above 1 is chosen where
  the model is already ahead (yacht, wine_red: better; energy: +0.06 worse) and on power_plant
  (+0.008 worse); on concrete, kin8nm and protein the held-out part keeps the same point.
  The constant `e` is picked only on kin8nm (no gain) and, on the fine grid, power_plant
  (+0.086 -> +0.067, still behind).
- **The shape is not what loses.** Even test-optimal parameters leave power_plant (+0.033;
  +0.027 with RF's own shape `d B + e`, which does no better than ours) and protein (+0.050)
  behind RF: there the RMSE ratio (log 1.035 = 0.034, log 1.026 = 0.026 nats) is most of the
  gap. kin8nm flips only at the test optimum (-0.003), concrete only below the noise floor
  (-0.021; within the floor +0.091). So no held-out choice within these families can flip two
  of the four; at most kin8nm, with a perfect choice.
- **What is left of the calibration loss is the choice within the family, not its size.** The
  chosen variance is about right on average (test mean (error / std)^2 0.88 / 1.15 / 0.91 on
  kin8nm, 1.04 / 0.76 / 0.99 on power_plant, 1.27 / 0.66 / 0.43 on concrete), but its mix of
  `W` and `B` differs from the test optimum: kin8nm `(c, d)` = (3.17, 1/4 or 1/16) on all three
  splits against (1.26-2.52, 1/4-1/2); power_plant (0.40-1.26, 1/2-1) against `c` = 1/8 with
  a small `e` (1/3300-1/700 of var(y)); concrete `c` 0.125 / 1.59 / 1.59 against 2.52 / 1.0 /
  0.125 (185 held-out rows). Worth at most the oracle column (kin8nm 0.008, power_plant 0.053,
  concrete 0.028 nats): a less noisy choice (more held-out rows or probe trees, or a paired
  standard-error rule towards `c = d = 1`) could flip kin8nm alone; power_plant and protein need
  a better mean.

Reproduce (from `benchmarks`, one job at a time; about 3 minutes, protein about 2):

    OMP_NUM_THREADS=1 nice python diag_variance_family.py \\
        --datasets concrete,yacht,energy,wine_red,kin8nm,power_plant,naval --splits 3
    OMP_NUM_THREADS=1 nice python diag_variance_family.py --datasets protein --splits 1

Rows: `results/variance_family.jsonl` (per split: the chosen `(c, d, e)` and test NLL of every
family, the oracle parameters); `--report` prints the table.

### Tried in session 6 (2026-11-23): the regression search ("auto" unchanged)

Rows MF-auto_joint (20-tree probes) and MF-auto_joint10 (10) of the tables above:
`bench_weights.JointSearchRegressor`, i.e. `choose_weights(joint_map=True, simplest=True)` with
`("extra_trees", "laplace_ard")` from 2000 rows. Two interleaved runs: RF, MF-auto and
MF-auto_joint, then RF, MF-auto and MF-auto_joint10; the RF and MF-auto rows of the tables are
the second run's (RMSE and NLL are deterministic; MF-auto_joint's fit ratios in the tables are
against the second run's RF). Against the MF-auto of the same run: mean RMSE / RF 1.116 -> 1.062
(yacht 1.394 -> 1.281, concrete 1.287 -> 1.102, kin8nm 1.067 -> 0.999, naval 1.092 -> 1.032,
protein 1.054 -> 1.039; power_plant 1.025 -> 1.035, wine_red 0.989 -> 0.992, energy 1.019
unchanged), NLL better than RF on 4 of 8 either way (kin8nm +0.050 -> +0.005, protein +0.112 ->
+0.063, power_plant +0.071 -> +0.086), mean fit / RF 1.90 -> 2.44 (power_plant 2.70 -> 3.99,
kin8nm 1.67 -> 2.46, protein 0.72 -> 1.34). **Not made the default**: it misses the fit budget
(<= 2x RF) that the current search meets, it does not move the NLL count, and it loses a little
on power_plant and wine_red.

Candidates (one cached table per split, first 3 standard splits: the validation rows of the
20-tree probes on the 20% that "auto" carves from train with the same seed, relevances on the
other 80%, and the test metrics of every candidate's 100-tree model fitted on the whole
training split; a rule chooses from the validation rows only, the test rows are then looked
up). The cache reproduces the pipeline's choices for "was" on all 15 splits. Cells: mean RMSE
/ RF over the splits; sets with NLL better than RF; mean fit / RF (CPU of the relevances, the
rule's probes and the final fit, summed, not interleaved: compare rows, not with the tables
above). "+1se": the simplest candidate (smallest power, then min-max, then extra trees) that
the best does not beat by one paired standard error; "joint": every power under both maps.

| rule | yacht | concrete | energy | kin8nm | p_plant | mean | NLL < RF | fit / RF |
|---|---|---|---|---|---|---|---|---|
| was (power, then quantile) | 1.394 | 1.287 | 1.019 | 1.067 | 1.025 | 1.158 | 2 of 5 | 2.34 |
| map first, +1se | 1.281 | 1.102 | 1.044 | 1.067 | 1.064 | 1.112 | 2 of 5 | 2.31 |
| joint | 1.394 | 1.146 | 1.017 | 1.070 | 1.035 | 1.132 | 2 of 5 | 2.60 |
| joint, +1se | 1.281 | 1.102 | 1.019 | 1.067 | 1.035 | 1.101 | 2 of 5 | 2.60 |
| joint, mix a in {0, 0.2} | 1.394 | 1.146 | 1.017 | 1.070 | 1.035 | 1.132 | 2 of 5 | 2.91 |
| joint, ET on quantile data | 1.394 | 1.133 | 1.031 | 1.059 | 1.064 | 1.136 | 2 of 5 | 2.60 |
| laplace_ard, joint, +1se | 1.303 | 1.125 | 1.653 | 0.999 | 1.060 | 1.228 | 2 of 5 | 4.28 |
| ET + laplace_ard, +1se | 1.281 | 1.102 | 1.289 | 0.999 | 1.035 | 1.141 | 2 of 5 | 5.12 |
| MF-auto_joint | 1.281 | 1.102 | 1.019 | 0.999 | 1.035 | 1.087 | 2 of 5 | 2.91 |
| MF-auto_joint10 | 1.281 | 1.146 | 1.019 | 1.008 | 1.035 | 1.098 | 2 of 5 | 2.58 |
| grid lifetimes, +1se | 2.189 | 1.085 | 1.046 | — | — | — | 2 of 3 | 54.07 |
| oracle (ET, test rows) | 1.198 | 1.061 | 1.017 | 1.058 | 1.004 | 1.068 | 2 of 5 | 2.58 |

- Where the gap is. **concrete**: the map. Under min-max no candidate gets below 1.13 of RF
  even when chosen on the test rows; under the quantile map 1.00-1.09 per split (p = 0.5-1).
  The old order chose the power under min-max (p = 2 on two splits) and compared the quantile
  map at that power only (1.09, 1.22, 1.57 at p = 2); the joint choice takes p = 1 or 0.5.
  **yacht**: one feature (Froude number) holds 99% of the importance; p = 1 beats p = 2 on the
  test rows of all 3 splits, but the 56-row validation part picks 2 on two of them (the
  simplest rule recovers one: 1.39 -> 1.28). Any mix with uniform weights (a = 0.2) costs
  0.3-2x RMSE on yacht (cuts on near-irrelevant features before the Froude number is
  resolved). **kin8nm**: the ARD Laplace lifetimes beat every extra-trees power on every split
  (0.98-1.03 against 1.05-1.07) and win on validation too.
- Ceiling: the best of about 50 candidates per split chosen on the *test* rows gives yacht
  1.176, concrete 1.057, energy 1.015, kin8nm 0.996, power_plant 1.004; with naval 1.03,
  wine_red 0.99 and protein 1.04 (MF-auto_joint) the mean is about 1.04. The 1.05 target is at
  the edge of what a fixed weight-and-map choice can give, and yacht split 2 (RF RMSE 0.26 on
  31 test rows) alone moves the mean by 0.04-0.06 between neighbouring candidates.
- NLL follows the RMSE (see the calibration notes): no candidate flips power_plant, kin8nm,
  protein or concrete. Concrete split 0 with the quantile map at p = 1 (chosen by every joint
  rule): the regressor's held-out hyperparameter choice picks noise variance 0.0014 (var(y)
  about 280; concrete has duplicated inputs), one test point gets std 0.05 and the split's mean
  NLL is 315.7 (median over splits +0.05). A defect of the held-out choice on duplicated inputs
  (the online notes below saw it too), not of the weights; it would have to be fixed there
  before a joint search is made the default.
- Mondrian grid lifetimes (`MondrianGridRidge(n_grids=20, alpha=0.1)`, greedy add search on the
  80% part, lifetimes as relevances): 4.6-8.7 s per search, 20-80x RF's fit on the small sets,
  and worse weights (yacht 2.19: it switches features 0-3 off). Laplace ARD alone: 7-9x RF on
  energy (0.7-0.9 s for a 500-row GP) and energy 1.65; from 2000 rows it costs 0.3-0.4 s (kin8nm
  RF 2.7 s). Relevances computed on the quantile-mapped data: no gain (extra trees are nearly
  invariant to monotone maps). Map first (quantile at uniform weights, then the power under
  it): power_plant 1.025 -> 1.064. 10-tree probes: the probes take 0.01-0.23 s each against a
  0.2-3.5 s final fit, so halving them takes the mean fit from 2.44 to 2.17 of RF
  (MF-auto_joint10 above: power_plant 3.37, kin8nm 2.05, naval 1.78) and the mean RMSE from
  1.062 to 1.069 (concrete 1.10 -> 1.15, kin8nm 1.00 -> 1.01): still over the budget.

### Calibrated predictive variance (2026-11-23, later run)

The RF and MF-auto regression rows are from this run (MF, ET, HGB: earlier runs, their fit
ratios against this run's RF). The held-out choice keeps its noise share and rate (so every
mean, hence RMSE, is unchanged) and then chooses a variance scale c (noise and prior variances
together) and a factor d of the spread of the tree means by the NLL expected for the 100-tree
forest, the 8-tree probe's Monte-Carlo error corrected (docs: "The regressor"). Before = the
MF-auto rows of the previous run (same seeds: RMSE and NLL are deterministic; fit ratios are
not); mean (e / std)^2 on the test rows, 1 when calibrated.

| dataset | RMSE / RF | NLL - RF before | after | (e/std)^2 before | after | fit/RF before | after |
|---|---|---|---|---|---|---|---|
| power_plant | 1.025 | +0.093 | +0.071 | 0.77 | 0.97 | 1.86 | 2.53 |
| kin8nm | 1.067 | +0.054 | +0.050 | 0.83 | 0.99 | 1.27 | 1.59 |
| naval | 1.092 | -0.103 | -0.765 | 0.13 | 0.67 | 1.03 | 1.21 |
| concrete | 1.287 | +0.242 | +0.233 | 0.79 | 1.11 | 1.80 | 2.16 |
| energy | 1.019 | -0.410 | -0.399 | 1.02 | 1.18 | 2.29 | 2.60 |
| wine_red | 0.989 | -1.691 | -1.709 | 0.77 | 1.10 | 1.63 | 1.98 |
| yacht | 1.394 | -0.619 | -0.827 | 0.85 | 1.00 | 1.81 | 1.87 |
| protein | 1.054 | +0.106 | +0.112 | 1.05 | 0.97 | 0.66 | 0.91 |
| mean | 1.116 | 4 of 8 better | 4 of 8 | | | 1.54 | 1.86 |

- Calibration is reached (mean (e/std)^2 0.97-1.18 except naval 0.67, from 0.13-1.05) but it
  does not flip a set: NLL follows the RMSE. A Gaussian predictive whose RMSE is r times RF's
  loses about log r nats against an equally calibrated RF (kin8nm log 1.067 = 0.065 > its gap
  0.050; concrete 0.25 vs 0.23; power_plant 0.025 vs 0.071, protein 0.053 vs 0.112: those two
  also lose on the shape of the variance). Rescaling a variance that is wrong by a factor z
  gains only 0.5 (z - 1 - log z) nats: 0.01 at kin8nm's former z = 0.83.
- Fit time: interleaved on power_plant split 0 the calibration adds 0.2-0.7 s to a 4.5-5.2 s
  fit (the held-out choice is about half of the fit); the rest of the growth against the
  previous run is machine load (the previous code measured the same day: power_plant 2.13,
  energy 2.46, concrete 2.02 of RF). Mean 1.86 <= 2: still met; max 2.60 (energy, 0.6 s fits).
- Variants measured (3 splits; 7 sets without protein unless said): choosing (share, rate, c)
  jointly by the expected NLL moved the means: naval 1.092 -> 1.113, wine_red 0.989 -> 1.010,
  energy 1.019 -> 1.026 RMSE / RF, 4 of 8 still. (share, rate, c, d) jointly, with c scaling
  the trees' predictive variances after the fact: yacht 1.39 -> 2.23 (the choice over-fits
  31-row-scale differences) and kin8nm (e/std)^2 1.48 (a tree's predictive mixes the nodes a
  point may branch off at; only the noise-and-prior scale multiplies it consistently). Choosing
  (share, rate) by the corrected held-out squared error instead of the NLL: power_plant 1.002,
  kin8nm 1.045, wine_red 0.970, but concrete 1.21, energy 1.051, naval 1.101, yacht 1.656:
  mean 1.148 against 1.125 on the 7 sets; not kept.
- RMSE target (<= 1.05): **missed**, and not reachable by hyperparameters: the best (share,
  rate) grid point chosen on the *test* rows (an oracle) gives power_plant 0.958 (chosen
  0.965), kin8nm 1.041 (1.060), concrete 1.070 (1.101) on split 0, and pruning the trees at
  the 50-95% quantiles of their split times never beats lifetime inf. The mean is dominated by
  single splits: concrete split 2 1.63 and yacht split 2 1.84 (RF RMSE 0.26 on 31 test rows).
- Classification unchanged (no classifier change in this run): satimage stays -1.45 points.

### Notes (runs of 2026-11-22 and 2026-11-23, shared 2-core machine, OMP_NUM_THREADS=1)

- Splits: the first 3 standard splits of each regression set, 1 for protein; classification on
  the fixed splits. MF-auto = `feature_weights="auto"` (extra-trees importances, power chosen on
  validation and kept only when it beats uniform weights by more than one paired standard error
  over the validation rows, then min-max or quantile map by the same rule). The MF and MF-auto
  rows (and dna, letter, usps, satimage MF-auto) are from 2026-11-23, with the regressor's
  held-out hyperparameter probe at 8 trees on at most 800 points (was 4 on 2000); the RF, ET,
  HGB rows and their fit times are from 2026-11-22 (fit ratios: +-20% on this machine). MF
  without weights: mean RMSE / RF 2.593 -> 2.658, fit 0.72 -> 0.94 of RF with the 8-tree probe.
- Issue 12 targets. Mean RMSE / RF <= 1.05: **missed** (1.116; 1.106 in the run of 2026-11-22,
  1.119 with that run's search on today's code: concrete 1.24 -> 1.31 and yacht 1.25 -> 1.31
  moved with the code merged in between, not with the weights). NLL better than RF on >= 6 of 8:
  **missed** (4 of 8: naval, energy, wine_red, yacht; the gaps on the others shrank:
  power_plant +0.14 -> +0.09, kin8nm +0.14 -> +0.05, protein +0.14 -> +0.11, concrete +0.25 ->
  +0.24, against the old search on today's code). Fit time including the search <= 2x RF:
  **met** (mean 1.54, max 2.29 on energy; 1.86, max 2.60, in the later run above). dna
  within 1 point: **met** (+0.59). satimage within 1
  point: **missed** (-1.45). letter not worse than today: **met** (+0.34 points). usps not worse
  than today: **met** (93.12% vs 92.92% without weights; 92.68% before the paired rule).
- Variants measured on 2026-11-23 (MF-auto, 8 sets: mean over splits of RMSE / RF, NLL better
  than RF, mean fit / RF): the old rule (plain best mean) on today's code 1.119, 4/8, 1.26; the
  paired rule 1.119, 4/8, 1.35 (no regression set moves by more than 0.005: it only guards
  against small validation gains); plus greedy doubling/halving probes of the 2 largest weights
  after the power (stop at the first dimension where neither helps) 1.116, 4/8, 1.49: within
  the noise, not kept; plus 16 held-out probe trees (800 points) instead of 4 (2000): kin8nm
  1.114 -> 1.041 but about 3x RF's fit on the small sets, so 8 trees: 1.116, 4/8, 1.54
  (kin8nm 1.067, power_plant 1.025, naval 1.092, protein 1.054; yacht 1.31 -> 1.39 on 31-row
  test splits). Calibration on split 0 with 4 probe trees (fraction of |error| < std, mean
  (error / std)^2): kin8nm 0.77, 0.65 and power_plant 0.84, 0.70 (underconfident: the std too
  wide), concrete 0.76, 1.19 (heavy tails); kin8nm's mean (error / std)^2 0.76 with 8 probe
  trees (2000 points), 0.73 with 16: still wide. RF's NLL: noise from out-of-bag residuals (OOB
  MSE minus the mean test tree spread, floored at 0.01 var(y))
  gave the same NLL as the 0.01 var(y) floor on concrete, power_plant and kin8nm (2.972, 2.662,
  -0.577): the RF column is its fair best of the two.
- Methods (MF-<method> rows; regression on 2 splits of 5 sets): mutual information is the
  cheapest but blind to interactions (yacht 2.7-3.0 RMSE vs 0.8-1.1; kin8nm no gain);
  permutation importances match impurity importances at 2-4x the search cost; GP ARD
  (Matern-1/2, 300 rows) was best on kin8nm (0.144-0.147 vs 0.155) but 71x RF's fit on dna and
  the worst on satimage. Impurity importances of 50 extra trees are the default.
- Powers: adding p = 4 to {0, 0.5, 1, 2} changed no choice on yacht, concrete, energy and naval
  (2 splits each; p = 4 always scored below p = 2 on validation).
- Kernel (one run, not in the tables): MondrianKernelRidge(50, lifetime="auto",
  max_lifetime=50) on cpu_act (fixed 6554/1638 split, seed 0): test RMSE 3.135 without weights,
  2.876 with `feature_weights="auto"` (power 0.5, min-max map), fit 5.3 s -> 36.6 s CPU (the
  kernel models probe themselves: 5 probe fits plus the relevance trees).
- Online vs batch (table from 2026-11-22, 4 held-out probe trees): the regressor's held-out
  hyperparameters are now re-chosen from the stored points whenever the store grew 1.25x.
  Remaining gaps come from the maps frozen on the first rows (min-max after 64 rows, weights
  after 256) and from the held-out choice itself: on concrete split 0 (no weights) the choice at
  768 stored points picked the smallest noise share (1e-6; concrete has duplicated inputs, so
  held-out rows coincide with training rows) and one test point has NLL 1031 (mean 13.4 against
  3.5 batch; the issue saw about 1000 on one split).
"""
