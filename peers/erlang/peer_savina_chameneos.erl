%% savina_chameneos: Savina's chameneos. Chameneo i starts with color i rem 3 and sends
%% {meet_me, Color, self()} to the mall. The mall keeps at most one waiting request; when a
%% second arrives and fewer than M meetings happened it counts a meeting and forwards the
%% waiting request to the newcomer. A chameneo receiving the other's meet_me takes the
%% complement color, counts a meeting, sends {change, NewColor} to the other and meet_me to
%% the mall; one receiving change takes that color, counts and sends meet_me. Once M
%% meetings happened the mall answers every meet_me (and the one waiting) with `exit`; a
%% chameneo answers with {meetings, Count} and ends; the mall sums the C counts and hands the
%% sum to the driver. Check: the counts sum to 2M.
-module(peer_savina_chameneos).
-export([run/1]).

chameneo(Mall, Color, Meetings) ->
    receive
        {meet_me, OtherColor, Other} ->
            New = peer_savina:complement(Color, OtherColor),
            Other ! {change, New},
            Mall ! {meet_me, New, self()},
            chameneo(Mall, New, Meetings + 1);
        {change, New} ->
            Mall ! {meet_me, New, self()},
            chameneo(Mall, New, Meetings + 1);
        exit ->
            Mall ! {meetings, Meetings}
    end.

%% Waiting: none or the waiting {meet_me, Color, Pid}.
mall(Waiting, Done, M, C, Driver) when Done < M ->
    receive
        {meet_me, _, _} = Req when Waiting =:= none ->
            mall(Req, Done, M, C, Driver);
        {meet_me, _, Newcomer} ->
            Newcomer ! Waiting,
            mall(none, Done + 1, M, C, Driver)
    end;
mall(Waiting, _, _, C, Driver) ->
    case Waiting of
        {meet_me, _, Pid} -> Pid ! exit;
        none -> ok
    end,
    mall_exit(C, 0, Driver).

%% M meetings happened: every meet_me gets `exit`; sums the C counts.
mall_exit(0, Sum, Driver) -> Driver ! {sum, Sum};
mall_exit(Left, Sum, Driver) ->
    receive
        {meet_me, _, Pid} -> Pid ! exit, mall_exit(Left, Sum, Driver);
        {meetings, K} -> mall_exit(Left - 1, Sum + K, Driver)
    end.

run(#{chameneos := C, meetings := M}) ->
    Self = self(),
    Mall = spawn(fun() -> receive go -> mall(none, 0, M, C, Self) end end),
    Chameneos = [spawn(fun() ->
                               Color = I rem 3,
                               receive go -> Mall ! {meet_me, Color, self()} end,
                               chameneo(Mall, Color, 0)
                       end) || I <- lists:seq(0, C - 1)],
    T0 = peer_savina:now_ns(),
    Mall ! go,
    [P ! go || P <- Chameneos],
    Sum = receive {sum, S} -> S end,
    Secs = peer_savina:secs_since(T0),
    Sum =:= 2 * M orelse
        peer_savina:fail("savina_chameneos: meetings counted ~p, expected ~p", [Sum, 2 * M]),
    {Secs, []}.
