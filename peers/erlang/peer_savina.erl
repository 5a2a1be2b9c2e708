%% The Savina micro and concurrency workloads (crates/troupe-bench-contract/src/savina.rs)
%% on Erlang/OTP: this module reads their command line (same flags and defaults as the
%% contract), runs the rounds (--warmup W unprinted, --samples K printed, each with fresh
%% processes, the next one starting once the previous one's processes are gone) and prints
%% one JSON line per sample through peer_erlang's reporter (unit "ms", rate = wall
%% milliseconds of the measured phase). It also holds what the workloads share: the
%% contract's random numbers (Rng), its busy work and the chameneos color rule.
%%
%% Each workload lives in its own module, peer_savina_<name>, exporting run(Params) ->
%% {Seconds, Extras}: it builds its processes, times the measured phase, checks the result
%% (exit 1 with FAILED: on a wrong one), stops its processes and returns the figure.
%% They are written the way Erlang does message passing: plain processes, `!` and
%% `receive`, state in the loop's arguments, a request carrying the sender's pid where an
%% answer is wanted.
-module(peer_savina).
-export([main/1]).
-export([rng_next/1, below/2, busy/2, complement/2, secs_since/1, now_ns/0, fail/2,
         await_all/2]).

%% Knuth's MMIX constants; the state is kept modulo 2^64 with `band`.
-define(LCG_MUL, 6364136223846793005).
-define(LCG_INC, 1442695040888963407).
-define(MASK64, 16#FFFFFFFFFFFFFFFF).

%% ------------------------------------------------------------------ specs

%% {flag, default, max}; the JSON key is the flag in snake case.
specs("savina_pingpong") -> [{"pings", 40000, inf}];
specs("savina_count") -> [{"increments", 1000000, inf}];
specs("savina_fjthrput") -> [{"messages", 10000, inf}, {"actors", 60, inf}];
specs("savina_fjcreate") -> [{"actors", 40000, inf}];
specs("savina_threadring") -> [{"actors", 100, inf}, {"passes", 100000, inf}];
specs("savina_chameneos") -> [{"chameneos", 100, inf}, {"meetings", 200000, inf}];
specs("savina_big") -> [{"actors", 120, inf}, {"pings", 20000, inf}];
specs("savina_concdict") ->
    [{"workers", 20, inf}, {"requests", 10000, inf}, {"write-percent", 10, 100}];
specs("savina_bndbuffer") ->
    [{"buffer", 50, inf}, {"producers", 40, inf}, {"consumers", 40, inf},
     {"items", 1000, inf}, {"cost", 25, inf}];
specs("savina_philosopher") -> [{"philosophers", 20, inf}, {"rounds", 10000, inf}];
specs("savina_barber") ->
    [{"haircuts", 5000, inf}, {"seats", 1000, inf}, {"arrival-cost", 1000, inf},
     {"haircut-cost", 1000, inf}];
specs("savina_banking") -> [{"accounts", 1000, 1 bsl 31}, {"transfers", 50000, inf}];
specs(_) -> unknown.

module("savina_" ++ Name) -> list_to_atom("peer_savina_" ++ Name).

key(Flag) -> list_to_atom(lists:flatten(string:replace(Flag, "-", "_", all))).

%% ------------------------------------------------------------------ entry point

main([Workload | Rest]) ->
    Specs = case specs(Workload) of
                unknown -> bad_usage("unknown workload `~s`", [Workload]);
                S -> S
            end,
    Flags = flags(Rest, []),
    {Threads, F1} = take("threads", Flags, 1, inf, 2),
    {Samples, F2} = take("samples", F1, 1, inf, 1),
    {Warmup, F3} = take("warmup", F2, 0, inf, 0),
    {Params, F4} = lists:mapfoldl(
                     fun({Flag, Default, Max}, Acc) ->
                             {V, Acc2} = take(Flag, Acc, 1, Max, Default),
                             {{key(Flag), V}, Acc2}
                     end, F3, Specs),
    case F4 of
        [] -> ok;
        [{K, _} | _] -> bad_usage("unknown flag `--~s` for workload `~s`", [K, Workload])
    end,
    check(Workload, maps:from_list(Params)),
    put(threads, Threads),
    Mod = module(Workload),
    Settled = erlang:system_info(process_count),
    lists:foreach(
      fun(S) ->
              log("erlang ~s round ~p", [Workload, S]),
              peer_erlang:open_round(S =< Warmup),
              {Secs, Extras} = Mod:run(maps:from_list(Params)),
              peer_erlang:figure(Workload, Params, Secs, Secs * 1000.0, "ms", Extras),
              peer_erlang:await_processes(Settled)
      end, lists:seq(1, Warmup + Samples)),
    halt(0).

%% One chameneo alone never meets anyone: the run could not end.
check("savina_chameneos", #{chameneos := C}) when C < 2 ->
    bad_usage("`--chameneos` must be at least 2 (a lone chameneo never meets), got `~p`", [C]);
check("savina_banking", #{accounts := A}) when A < 2 ->
    bad_usage("`--accounts` must be at least 2 (a transfer needs two accounts), got `~p`", [A]);
check(_, _) -> ok.

%% ------------------------------------------------------------------ command line

bad_usage(Fmt, Args) ->
    io:format(standard_error,
              "error: " ++ Fmt ++ "~n"
              "usage: peer-erlang <workload> [--threads N] [--samples K] [--warmup W] [params]~n"
              ++ usage(), Args),
    halt(2).

usage() ->
    Names = ["savina_pingpong", "savina_count", "savina_fjthrput", "savina_fjcreate",
             "savina_threadring", "savina_chameneos", "savina_big", "savina_concdict",
             "savina_bndbuffer", "savina_philosopher", "savina_barber", "savina_banking"],
    lists:flatten(
      [io_lib:format("  ~-20s~s~n",
                     [N, lists:join(" ", [io_lib:format("--~s ~p", [F, D])
                                          || {F, D, _} <- specs(N)])])
       || N <- Names]).

flags([], Acc) -> lists:reverse(Acc);
flags(["--" ++ Flag | Rest], Acc) ->
    case string:split(Flag, "=") of
        [K, V] -> flags(Rest, [{K, V} | Acc]);
        [K] ->
            case Rest of
                [V | R] -> flags(R, [{K, V} | Acc]);
                [] -> bad_usage("flag `--~s` needs a value", [K])
            end
    end;
flags([Other | _], _) -> bad_usage("unexpected argument `~s`", [Other]).

%% The last value given for Flag (checked within Min..=Max), else Default.
take(Flag, Flags, Min, Max, Default) ->
    case [V || {K, V} <- Flags, K =:= Flag] of
        [] -> {Default, Flags};
        Values ->
            V = lists:last(Values),
            N = case catch list_to_integer(
                             string:trim(lists:flatten(string:replace(V, "_", "", all)))) of
                    I when is_integer(I), I >= Min, (Max =:= inf orelse I =< Max) -> I;
                    _ when Max =:= inf ->
                        bad_usage("`--~s` wants an integer of at least ~p, got `~s`",
                                  [Flag, Min, V]);
                    _ ->
                        bad_usage("`--~s` must be within ~p..=~p, got `~s`", [Flag, Min, Max, V])
                end,
            {N, [KV || {K, _} = KV <- Flags, K =/= Flag]}
    end.

%% ------------------------------------------------------------------ shared helpers

log(Fmt, Args) -> io:format(standard_error, Fmt ++ "~n", Args).

fail(Fmt, Args) ->
    io:format(standard_error, "FAILED: " ++ Fmt ++ "~n", Args),
    halt(1).

now_ns() -> erlang:monotonic_time(nanosecond).

secs_since(T0) -> (now_ns() - T0) / 1.0e9.

%% Receives N messages {Tag, Value} and returns the Values (in arrival order reversed).
await_all(Tag, N) -> await_all(Tag, N, []).

await_all(_, 0, Acc) -> Acc;
await_all(Tag, N, Acc) ->
    receive {Tag, V} -> await_all(Tag, N - 1, [V | Acc]) end.

%% The contract's Rng: returns {Value, NewState}, Value in 0..2^31.
rng_next(State) ->
    S = (State * ?LCG_MUL + ?LCG_INC) band ?MASK64,
    {S bsr 33, S}.

%% The next value modulo N: {Value, NewState}.
below(N, State) ->
    {V, S} = rng_next(State),
    {V rem N, S}.

%% The contract's busy work: Iterations steps of the generator from Seed; the last state.
busy(0, X) -> X;
busy(N, X) -> busy(N - 1, (X * ?LCG_MUL + ?LCG_INC) band ?MASK64).

%% Chameneos' color rule (colors 0, 1, 2).
complement(C, C) -> C;
complement(Own, Other) -> 3 - Own - Other.
