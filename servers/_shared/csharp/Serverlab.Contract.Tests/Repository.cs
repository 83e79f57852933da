using System.Globalization;
using System.Text.Json;

namespace Serverlab.Contract.Tests;

/// <summary>The repository's shared test data, found from the test assembly's folder upwards.</summary>
internal static class Repository
{
    public const string DisplayName = "Test Stack";

    private static readonly Lazy<string> LazyRoot = new(FindRoot);
    private static readonly Lazy<TradingCalendar> LazyCalendar =
        new(() => TradingCalendar.Load(CalendarFile));

    /// <summary>The nearest folder above the test assembly that holds <c>contracts/vectors</c>.</summary>
    public static string Root => LazyRoot.Value;

    public static string CalendarFile =>
        Path.Combine(Root, "contracts", "calendar", "xshg-non-trading-weekdays.txt");

    public static TradingCalendar Calendar => LazyCalendar.Value;

    public static string ServersDir => Path.Combine(Root, "servers");

    private static string FindRoot()
    {
        foreach (string start in new[] { AppContext.BaseDirectory, Directory.GetCurrentDirectory() })
        {
            for (DirectoryInfo? dir = new(start); dir is not null; dir = dir.Parent)
            {
                if (Directory.Exists(Path.Combine(dir.FullName, "contracts", "vectors")))
                {
                    return dir.FullName;
                }
            }
        }
        throw new InvalidOperationException(
            $"no contracts/vectors folder above {AppContext.BaseDirectory} or {Directory.GetCurrentDirectory()}");
    }

    /// <summary>contracts/vectors/<paramref name="name"/>, parsed.</summary>
    public static JsonElement Vectors(string name)
    {
        using JsonDocument document = JsonDocument.Parse(
            File.ReadAllBytes(Path.Combine(Root, "contracts", "vectors", name)));
        return document.RootElement.Clone();
    }
}

/// <summary>A clock that always says the same instant.</summary>
internal sealed class FixedClock(DateTimeOffset now) : TimeProvider
{
    public static FixedClock At(string instant) =>
        new(DateTimeOffset.Parse(instant, CultureInfo.InvariantCulture,
            DateTimeStyles.AssumeUniversal));

    public override DateTimeOffset GetUtcNow() => now;
}
