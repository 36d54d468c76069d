"""The refresh pipeline: claim the connections that are due, poll them concurrently, store the outcome.

- ``claim``: who polls what. Claims (healthchecks' way, no locks) are one conditional ``UPDATE … SET
  claimed_until = now + lease WHERE claimed_until IS NULL OR claimed_until < now``. ``claimed_until``
  is the claim's token: every later write of the refresh is a conditional update on ``claimed_until =
  <token>``, so only the claim holder writes, and a killed worker's claim lapses at the lease's end
  (the task's hard time limit). A claimant's ``now`` is ``timezone.now()`` (microseconds): two
  claimants never share one.
- ``poll``: one connection's quota endpoint, fetched without touching the database; a 401 on a
  credential the ladder owns gets one refresh and a verifying poll first.
- ``store``: an outcome written under the claim (its classifications are listed there).
- ``fanout``: many polls at once, and the runs that the tasks call.
- ``on_demand``: refreshes asked for by resolutions and operators, queued once.

Where a poll goes: ``ladder.services.upstream``.
"""
