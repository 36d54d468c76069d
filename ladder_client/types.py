"""What the ladder's gateway API answers and takes: the Structs of ladder.contract.api (API.md,
STATE.md), under the names this client has always exported.

Decoding is strict about the keys the contract promises and ignores keys it does not know, so a
newer ladder that adds a field does not break an older client.
"""

from __future__ import annotations

from ladder.contract import api

BorrowedCredential = api.CredentialAnswer
Candidate = api.Candidate
ConnectionState = api.Connection
ConnectionsReport = api.ConnectionList
CredentialSummary = api.CredentialInfo
EmptyPool = api.Empty
Excluded = api.Exclusion
FailureOutcome = api.FailureResponse
PoolEntry = api.PoolEntry
QuotaWindow = api.Window
Reading = api.Reading
Resolution = api.Resolution
RungBudget = api.Budget
UsageEvent = api.UsageEvent
UsageRecorded = api.UsageRecorded
UsageReport = api.UsageResponse
