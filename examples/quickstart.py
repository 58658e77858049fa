"""Quickstart: HSPR's Python API on a small synthetic response matrix.

Run: python examples/quickstart.py   (takes a few seconds)

1. Make a response matrix of 60 historical (source) agents x 200 tasks.
2. Fit HSPR on the sources.
3. Evaluate a new (target) agent: ask which task to run, run it (here: look it up in a
   hidden row), tell the outcome; after 20 tasks (10 %), read the estimate.
"""

import numpy as np
from scipy import special

from hspr import ResponseMatrix, get_method
from hspr.methods.hspr import HSPRConfig


def simulate(n_agents=61, n_tasks=200, seed=0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_agents)
    b = rng.normal(-0.5, 1.5, n_tasks)
    a = rng.uniform(0.5, 2.0, n_tasks)
    y = rng.random((n_agents, n_tasks)) < special.expit(b + np.outer(theta, a))
    agents = [f"agent{i:02d}" for i in range(n_agents)]
    tasks = [f"repo__task-{j:03d}" for j in range(n_tasks)]
    return ResponseMatrix(agents, tasks, y.astype(int))


def main():
    bank = simulate()
    source = bank.rows(np.arange(1, bank.n_agents))  # historical agents
    hidden = dict(zip(bank.tasks, bank.values[0]))  # the new agent's outcomes (unknown in real life)

    # fewer nodes/draws than the paper's 8,192 / 131,072 to keep the example instant
    model = get_method("hspr", config=HSPRConfig(n_nodes=2048, n_draws=32768)).fit(source)
    session = model.start(budget=20, seed=0)
    while not session.done:
        task = session.ask()              # which task to run next
        session.tell(task, hidden[task])  # run it, report resolved (1) / unresolved (0)
    est = session.estimate()

    truth = bank.values[0].mean()
    print(f"queried {est.n_queried} of {bank.n_tasks} tasks: {session.queried[:5]} ...")
    print(f"estimate {100 * est.point:.1f} %  (90 % credible interval {100 * est.lower:.1f} - {100 * est.upper:.1f} %)")
    print(f"true score {100 * truth:.1f} %   error {100 * abs(est.point - truth):.2f} pp")
    return est, truth


if __name__ == "__main__":
    main()
