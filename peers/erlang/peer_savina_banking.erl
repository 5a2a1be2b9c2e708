%% savina_banking: Savina's bank transaction. A accounts (processes) start with 1,000,000
%% each. The teller draws from Rng(42): per transfer src = below(A), dst = below(A - 1)
%% (plus one if >= src), amount = below(1000) + 1, and sends {debit, DstPid, Amount, self()}
%% to account src, all T at once. The source subtracts the amount and sends {credit,
%% Amount, self(), Teller} to the destination as a request; the destination adds it and
%% answers the source {credited, Teller}; the source then answers the teller
%% `transfer_done`. An account never blocks waiting for its reply (two accounts debiting
%% each other would deadlock): the reply is one more message its loop handles. The run ends
%% with T answers; then the teller asks each account for its balance ({balance, self()}),
%% which also stops it. Check: T answers, the balances sum to A * 1,000,000.
-module(peer_savina_banking).
-export([run/1]).

-define(INITIAL, 1000000).

account(Balance) ->
    receive
        {debit, Dst, Amount, Teller} ->
            Dst ! {credit, Amount, self(), Teller},
            account(Balance - Amount);
        {credit, Amount, Src, Teller} ->
            Src ! {credited, Teller},
            account(Balance + Amount);
        {credited, Teller} ->
            Teller ! transfer_done,
            account(Balance);
        {balance, From} ->
            From ! {balance, Balance}
    end.

%% The T answers pile up in the teller's mailbox while it is still drawing and sending (and
%% making garbage): off_heap keeps that queue out of each of its garbage collections, which
%% would otherwise scan it every time (quadratic; 5x slower at the defaults).
teller(Accounts, T, Driver) ->
    process_flag(message_queue_data, off_heap),
    receive go -> ok end,
    transfers(Accounts, tuple_size(Accounts), 42, T),
    ok = await_done(T),
    Driver ! {transfers_done, T},
    [Acc ! {balance, self()} || Acc <- tuple_to_list(Accounts)],
    Driver ! {balances, lists:sum(peer_savina:await_all(balance, tuple_size(Accounts)))}.

transfers(_, _, _, 0) -> ok;
transfers(Accounts, A, Rng, Left) ->
    {Src, Rng1} = peer_savina:below(A, Rng),
    {Dst0, Rng2} = peer_savina:below(A - 1, Rng1),
    Dst = case Dst0 >= Src of true -> Dst0 + 1; false -> Dst0 end,
    {Amount0, Rng3} = peer_savina:below(1000, Rng2),
    element(Src + 1, Accounts) ! {debit, element(Dst + 1, Accounts), Amount0 + 1, self()},
    transfers(Accounts, A, Rng3, Left - 1).

await_done(0) -> ok;
await_done(K) -> receive transfer_done -> await_done(K - 1) end.

run(#{accounts := A, transfers := T}) ->
    Self = self(),
    Accounts = list_to_tuple([spawn(fun() -> account(?INITIAL) end) || _ <- lists:seq(1, A)]),
    Teller = spawn(fun() -> teller(Accounts, T, Self) end),
    T0 = peer_savina:now_ns(),
    Teller ! go,
    Done = receive {transfers_done, D} -> D end,
    Secs = peer_savina:secs_since(T0),
    Sum = receive {balances, S} -> S end,
    Done =:= T orelse peer_savina:fail("savina_banking: ~p transfers done, expected ~p", [Done, T]),
    Sum =:= A * ?INITIAL orelse
        peer_savina:fail("savina_banking: balances sum to ~p, expected ~p", [Sum, A * ?INITIAL]),
    {Secs, []}.
